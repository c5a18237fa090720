import { isCredentialVariable, prepareTaskEnvironment } from './task-environment';

const WORKER_ENV: NodeJS.ProcessEnv = {
  PATH: '/usr/bin',
  HOME: '/root',
  MY_SETTING: 'kept',
  JOBQ_WORKFLOW_PREFIX: 'acct/Prod',
  JOBQ_KILL_TIMEOUT: '60',
  JOBQ_STORAGE_CONNECTION_STRING: 'DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net',
  JOBQ_TEST_AZURE_STORAGE_CONNECTION_STRING: 'UseDevelopmentStorage=true',
  JOBQ_BACKUP_TARGET: 'BlobEndpoint=https://acct.blob.core.windows.net;SharedAccessSignature=sv=2022&sig=abc',
  JOBQ_SECRET_TOKEN: 'tok-123456',
  AZURE_STORAGE_CONNECTION_STRING: 'DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5',
  AZURE_STORAGE_KEY: 'a2V5',
  AZURE_STORAGE_SAS_TOKEN: 'sv=2022&sig=abc',
  AZURE_CLIENT_ID: 'client-id',
  AZURE_CLIENT_SECRET: 'client-secret',
  AZURE_TENANT_ID: 'tenant',
  AZURE_FEDERATED_TOKEN_FILE: '/var/run/secrets/token',
  IDENTITY_ENDPOINT: 'http://localhost:42356/msi/token',
  IDENTITY_HEADER: 'header',
  MSI_ENDPOINT: 'http://localhost/msi',
  MSI_SECRET: 'msi-secret',
};

describe('the task environment', () => {
  it('has no storage credential, Azure identity variable or worker secret', () => {
    const { env } = prepareTaskEnvironment(WORKER_ENV, undefined);
    expect(env).toEqual({
      PATH: '/usr/bin',
      HOME: '/root',
      MY_SETTING: 'kept',
      JOBQ_WORKFLOW_PREFIX: 'acct/Prod',
      JOBQ_KILL_TIMEOUT: '60',
    });
  });

  it('keeps a credential variable that kwargs.env names, with the value kwargs.env gives', () => {
    const { env, secrets } = prepareTaskEnvironment(WORKER_ENV, {
      AZURE_CLIENT_ID: 'task-client',
      AZURE_CLIENT_SECRET: '${{ secrets.TOKEN }}',
    });
    expect(env.AZURE_CLIENT_ID).toBe('task-client');
    expect(env.AZURE_CLIENT_SECRET).toBe('tok-123456');
    expect(env.AZURE_TENANT_ID).toBeUndefined();
    expect(env.JOBQ_SECRET_TOKEN).toBeUndefined();
    expect(secrets).toEqual(['tok-123456']);
  });

  it('never changes its inputs', () => {
    const kwargsEnv = { A: '${{ secrets.TOKEN }}' };
    const before = { ...WORKER_ENV };
    prepareTaskEnvironment(WORKER_ENV, kwargsEnv);
    expect(kwargsEnv).toEqual({ A: '${{ secrets.TOKEN }}' });
    expect(WORKER_ENV).toEqual(before);
  });

  it('names credential variables by name or by value', () => {
    expect(isCredentialVariable('JOBQ_WORKFLOW_QUEUES', 'acct')).toBe(false);
    expect(isCredentialVariable('JOBQ_EXTRA', 'https://acct.blob.core.windows.net/c?sv=2022&sig=abc')).toBe(true);
    expect(isCredentialVariable('JOBQ_API_KEY', 'x')).toBe(true);
    expect(isCredentialVariable('AZURE_SUBSCRIPTION_ID', 'x')).toBe(true);
    expect(isCredentialVariable('OTHER_APP_PASSWORD', 'x')).toBe(false); // not ours to judge: only JOBQ_* and Azure settings
  });
});
