import { describe, expect, it } from '@jest/globals';
import { chooseStorageConnection, describeConnectionString, storageConnectionFor } from './connection-string';

const SAS = 'sv=2024-08-04&ss=bqt&srt=sco&sp=rwdlacup&se=2030-01-01T00%3A00%3A00Z&sig=c2lnbmF0dXJl';
const AZURE_SAS =
  `BlobEndpoint=https://myacct.blob.core.windows.net/;QueueEndpoint=https://myacct.queue.core.windows.net/;` +
  `TableEndpoint=https://myacct.table.core.windows.net/;SharedAccessSignature=${SAS}`;
const AZURITE_SAS =
  'BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;' +
  `TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;SharedAccessSignature=${SAS}`;
const KEYED = 'DefaultEndpointsProtocol=https;AccountName=MyAcct;AccountKey=a2V5;EndpointSuffix=core.windows.net';

describe('describeConnectionString', () => {
  it('takes the account from AccountName, else from the endpoints (Azure host or emulator path), lowercased', () => {
    expect(describeConnectionString(KEYED)).toEqual({ account: 'myacct', credential: 'account key' });
    expect(describeConnectionString(AZURE_SAS)).toEqual({ account: 'myacct', credential: 'SAS' });
    expect(describeConnectionString(AZURITE_SAS)).toEqual({ account: 'devstoreaccount1', credential: 'SAS' });
    expect(
      describeConnectionString(
        'BlobEndpoint=https://myacct.privatelink.blob.core.windows.net;TableEndpoint=https://myacct.table.core.windows.net',
      ),
    ).toEqual({
      account: 'myacct',
      credential: 'none',
    });
    expect(describeConnectionString('QueueEndpoint=http://azurite:10001/DevStoreAccount1/')).toEqual({
      account: 'devstoreaccount1',
      credential: 'none',
    });
    expect(describeConnectionString('UseDevelopmentStorage=true')).toEqual({ account: 'devstoreaccount1', credential: 'account key' });
    expect(describeConnectionString('BlobEndpoint=https://storage.contoso.com;SharedAccessSignature=x')).toEqual({
      account: null,
      credential: 'SAS',
    });
    expect(describeConnectionString('nonsense')).toEqual({ account: null, credential: 'none' });
  });
});

describe('storageConnectionFor', () => {
  it('uses a SAS connection string (no AccountName) for the account of its endpoints', () => {
    expect(storageConnectionFor('myacct', { JOBQ_STORAGE_CONNECTION_STRING: AZURE_SAS })).toEqual({ connectionString: AZURE_SAS });
    expect(storageConnectionFor('devstoreaccount1', { AZURE_STORAGE_CONNECTION_STRING: AZURITE_SAS })).toEqual({
      connectionString: AZURITE_SAS,
    });
  });

  it('matches account names case-insensitively', () => {
    expect(storageConnectionFor('myacct', { JOBQ_STORAGE_CONNECTION_STRING: KEYED })).toEqual({ connectionString: KEYED });
  });

  it('uses an endpoint-only string (its endpoints with DefaultAzureCredential)', () => {
    const endpoints =
      'BlobEndpoint=https://myacct.blob.core.windows.net;QueueEndpoint=https://myacct.queue.core.windows.net;TableEndpoint=https://myacct.table.core.windows.net';
    expect(storageConnectionFor('myacct', { JOBQ_STORAGE_CONNECTION_STRING: endpoints })).toEqual({ connectionString: endpoints });
  });

  it('takes the first string that is for the account; otherwise the default credential (Azurite ports for devstoreaccount1)', () => {
    const env = { JOBQ_STORAGE_CONNECTION_STRING: KEYED, AZURE_STORAGE_CONNECTION_STRING: AZURITE_SAS };
    expect(storageConnectionFor('devstoreaccount1', env)).toEqual({ connectionString: AZURITE_SAS });
    expect(storageConnectionFor('other', env)).toEqual({ accountName: 'other' });
    expect(storageConnectionFor('devstoreaccount1', { JOBQ_STORAGE_CONNECTION_STRING: KEYED })).toEqual({
      connectionString: 'UseDevelopmentStorage=true',
    });
    expect(storageConnectionFor('myacct', { JOBQ_STORAGE_CONNECTION_STRING: '  ' })).toEqual({ accountName: 'myacct' });
  });
});

describe('chooseStorageConnection', () => {
  it('says where the connection comes from, and which strings it passed over', () => {
    expect(chooseStorageConnection('myacct', [{ from: 'JOBQ_STORAGE_CONNECTION_STRING', value: AZURE_SAS }]).source).toEqual({
      kind: 'connection-string',
      from: 'JOBQ_STORAGE_CONNECTION_STRING',
      credential: 'SAS',
    });
    expect(chooseStorageConnection('other', [{ from: 'config file connection.connection_string', value: KEYED }]).source).toEqual({
      kind: 'default-credential',
      passedOver: [{ from: 'config file connection.connection_string', account: 'myacct' }],
    });
    expect(chooseStorageConnection('devstoreaccount1', []).source).toEqual({ kind: 'development-storage' });
  });
});
