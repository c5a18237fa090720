import { describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig } from './config';
import { connectionFor } from './deployment';
import { storageAccess, storageAccessLine } from './storage-access';

const SIG = 'c2lnbmF0dXJlLXRoYXQtbXVzdC1ub3QtbGVhaw%3D%3D';
const SAS = `sv=2024-08-04&ss=bqt&srt=sco&sp=rwdlacup&se=2030-01-01T00%3A00%3A00Z&sig=${SIG}`;
const AZURE_SAS =
  'BlobEndpoint=https://myacct.blob.core.windows.net/;QueueEndpoint=https://myacct.queue.core.windows.net/;' +
  `TableEndpoint=https://myacct.table.core.windows.net/;SharedAccessSignature=${SAS}`;
const KEY = 'a2V5LXRoYXQtbXVzdC1ub3QtbGVhaw==';

function config(env: NodeJS.ProcessEnv, cwd = tmpdir()) {
  return resolveConfig({}, env, cwd);
}

describe('storageAccess and connectionFor', () => {
  it('uses a SAS connection string (no AccountName) for the account of its endpoints, and says so', () => {
    const c = config({ JOBQ_WORKFLOW_PREFIX: 'myacct/Proj', JOBQ_STORAGE_CONNECTION_STRING: AZURE_SAS });
    expect(connectionFor(c, 'myacct')).toEqual({ connectionString: AZURE_SAS });
    const access = storageAccess(c);
    expect(access).toEqual([
      { account: 'myacct', uses: 'connection string', from: 'JOBQ_STORAGE_CONNECTION_STRING', credential: 'SAS', note: null },
    ]);
    expect(storageAccessLine(access[0]!)).toBe('myacct: connection string from JOBQ_STORAGE_CONNECTION_STRING (SAS)');
    expect(JSON.stringify(access)).not.toContain(SIG);
  });

  it('matches the AccountName case-insensitively, and names the variable it came from', () => {
    const c = config({ JOBQ_WORKFLOW_PREFIX: 'myacct/Proj', AZURE_STORAGE_CONNECTION_STRING: `AccountName=MyAcct;AccountKey=${KEY}` });
    expect(connectionFor(c, 'myacct')).toEqual({ connectionString: `AccountName=MyAcct;AccountKey=${KEY}` });
    expect(storageAccess(c).map(storageAccessLine)).toEqual([
      'myacct: connection string from AZURE_STORAGE_CONNECTION_STRING (account key)',
    ]);
  });

  it('reports DefaultAzureCredential, and why, for an account the connection string is not for', () => {
    const c = config({ JOBQ_WORKFLOW_PREFIX: 'myacct/Proj', JOBQ_WORKFLOW_QUEUES: 'qacct', JOBQ_STORAGE_CONNECTION_STRING: AZURE_SAS });
    expect(connectionFor(c, 'qacct')).toEqual({ accountName: 'qacct' });
    expect(storageAccess(c).map(storageAccessLine)).toEqual([
      'myacct: connection string from JOBQ_STORAGE_CONNECTION_STRING (SAS)',
      'qacct: DefaultAzureCredential (the connection string from JOBQ_STORAGE_CONNECTION_STRING is for account myacct: not used for qacct)',
    ]);
    const none = config({ JOBQ_WORKFLOW_PREFIX: 'myacct/Proj' });
    expect(storageAccess(none)).toEqual([
      { account: 'myacct', uses: 'DefaultAzureCredential', from: null, credential: 'DefaultAzureCredential', note: null },
    ]);
  });

  it('reports an endpoint-only string, the config file as the origin, and the local emulator', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'jobq-access-'));
    try {
      await writeFile(
        join(dir, 'jobq.yaml'),
        'connection:\n  prefix: myacct/Proj\n  connection_string: "BlobEndpoint=https://myacct.blob.core.windows.net;TableEndpoint=https://myacct.table.core.windows.net"\n',
      );
      expect(storageAccess(config({}, dir)).map(storageAccessLine)).toEqual([
        'myacct: connection string from config file connection.connection_string (endpoints only: DefaultAzureCredential)',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    expect(storageAccess(config({ JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Proj' })).map(storageAccessLine)).toEqual([
      'devstoreaccount1: the local storage emulator on its default ports (UseDevelopmentStorage=true)',
    ]);
  });
});
