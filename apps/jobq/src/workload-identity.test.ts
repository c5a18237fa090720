import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configCheck } from './commands/workflow/doctor';
import { azureCredential, withServiceBusCredential, withStorageCredential } from './credential';
import { configFromFlags } from './flags';
import { cleanEnv, type CliResult } from './test-helpers/cli';

// Workload identity as AKS sets it up (deploy/README.md#identities-and-roles): DefaultAzureCredential
// exchanges the federated token file for an access token at AZURE_AUTHORITY_HOST. Here the authority
// is a loopback HTTPS server (a self-signed certificate made by openssl, trusted by the child through
// NODE_EXTRA_CA_CERTS, which Node reads only at start-up: hence a child process), and a second
// loopback HTTPS server stands for the blob, queue and table endpoints and records what each request
// is signed with.

const CHILD = join(__dirname, 'testdata', 'workload-identity-child.js');
const TENANT = '72f988bf-0000-4000-8000-00000000c0de';
const CLIENT_ID = '1b2c3d4e-0000-4000-8000-00000000beef';
const ACCESS_TOKEN = 'jobq-test-access-token';
const FEDERATED_TOKEN = 'jobq-test-federated-token';

const hasOpenssl = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0;
if (!hasOpenssl) process.stdout.write('skip: workload identity test needs openssl (apt-get install openssl)\n');
const describeWithOpenssl = hasOpenssl ? describe : describe.skip;

interface Seen {
  method: string;
  path: string;
  authorization: string | null;
  body: string;
}

let dir: string;
let authority: Server;
let sink: Server;
const authorityRequests: Seen[] = [];
const sinkRequests: Seen[] = [];

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`https://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
}

function record(list: Seen[], handle: (seen: Seen) => { status: number; body: unknown; headers?: Record<string, string> }) {
  return (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d: string) => (body += d));
    req.on('end', () => {
      const seen = { method: req.method ?? '?', path: req.url ?? '?', authorization: req.headers.authorization ?? null, body };
      list.push(seen);
      const answer = handle(seen);
      res.writeHead(answer.status, { 'content-type': 'application/json', connection: 'close', ...answer.headers });
      res.end(answer.body === null ? undefined : JSON.stringify(answer.body));
    });
  };
}

let authorityUrl: string;
let sinkUrl: string;

beforeAll(async () => {
  if (!hasOpenssl) return;
  dir = mkdtempSync(join(tmpdir(), 'jobq-wi-'));
  const made = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { encoding: 'utf8' },
  );
  if (made.status !== 0) throw new Error(`openssl req failed: ${made.stderr}`);
  const tls = { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
  writeFileSync(join(dir, 'federated-token'), FEDERATED_TOKEN);
  authority = createServer(
    tls,
    record(authorityRequests, (seen) => {
      const base = `${authorityUrl}/${TENANT}`;
      if (seen.path.includes('/discovery/instance')) {
        return {
          status: 200,
          body: { tenant_discovery_endpoint: `${base}/v2.0/.well-known/openid-configuration`, 'api-version': '1.1', metadata: [] },
        };
      }
      if (seen.path.includes('/.well-known/openid-configuration')) {
        return {
          status: 200,
          body: {
            token_endpoint: `${base}/oauth2/v2.0/token`,
            authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
            end_session_endpoint: `${base}/oauth2/v2.0/logout`,
            issuer: `${base}/v2.0`,
            jwks_uri: `${base}/discovery/v2.0/keys`,
            response_types_supported: ['code', 'token'],
          },
        };
      }
      if (seen.method === 'POST' && seen.path.includes('/oauth2/v2.0/token')) {
        return { status: 200, body: { token_type: 'Bearer', access_token: ACCESS_TOKEN, expires_in: 3600, ext_expires_in: 3600 } };
      }
      return { status: 404, body: { error: 'not_found' } };
    }),
  );
  sink = createServer(
    tls,
    record(sinkRequests, () => ({
      status: 404,
      body: null,
      headers: { 'x-ms-error-code': 'ResourceNotFound', 'x-ms-request-id': 'jobq-test' },
    })),
  );
  authorityUrl = await listen(authority);
  sinkUrl = await listen(sink);
});

afterAll(() => {
  authority?.close();
  sink?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function runChild(env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, sinkUrl], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}

describeWithOpenssl('workload identity', () => {
  it('signs blob, queue and table requests with the token the federated credential got', async () => {
    const env = cleanEnv({
      NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem'),
      AZURE_CLIENT_ID: CLIENT_ID,
      AZURE_TENANT_ID: TENANT,
      AZURE_FEDERATED_TOKEN_FILE: join(dir, 'federated-token'),
      AZURE_AUTHORITY_HOST: authorityUrl,
    });
    for (const name of ['AZURE_CLIENT_SECRET', 'AZURE_CLIENT_CERTIFICATE_PATH', 'AZURE_USERNAME', 'IDENTITY_ENDPOINT', 'MSI_ENDPOINT'])
      delete env[name];
    delete env.NODE_PATH;
    const result = await runChild(env);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    // The sink answers 404 to everything: each call fails after its request was sent, signed.
    expect(JSON.parse(result.stdout)).toEqual({
      blob: expect.stringMatching(/^RestError/),
      queue: expect.stringMatching(/^RestError/),
      table: expect.stringMatching(/^RestError/),
    });
    const services = ['blob', 'queue', 'table'];
    for (const service of services) {
      const requests = sinkRequests.filter((r) => r.path.startsWith(`/${service}/`));
      expect(requests.length).toBeGreaterThan(0);
      for (const request of requests) expect(request.authorization).toBe(`Bearer ${ACCESS_TOKEN}`);
    }
    // The token came from the federated token file, exchanged for this client id. (MSAL does not
    // reuse tokens of an authority it cannot validate, so the token requests are not counted here;
    // that every client gets the same credential object is checked below.)
    const tokenRequests = authorityRequests.filter((r) => r.method === 'POST');
    expect(tokenRequests.length).toBeGreaterThan(0);
    for (const request of tokenRequests) {
      const form = new URLSearchParams(request.body);
      expect(form.get('client_assertion')).toBe(FEDERATED_TOKEN);
      expect(form.get('client_id')).toBe(CLIENT_ID);
      expect(form.get('scope')).toBe('https://storage.azure.com/.default');
    }
  });
});

describe('one credential per process', () => {
  it('hands the same credential to every storage and Service Bus connection that signs with a token, and none to keyed ones', () => {
    const byName = withStorageCredential({ accountName: 'acct1' });
    const other = withStorageCredential({ accountName: 'acct2' });
    const endpoints = withStorageCredential({
      connectionString: 'BlobEndpoint=https://acct3.blob.core.windows.net;TableEndpoint=https://acct3.table.core.windows.net',
    });
    const bus = withServiceBusCredential({ namespace: 'ns.servicebus.windows.net' });
    expect(byName.credential).toBeDefined();
    expect(byName.credential).toBe(azureCredential());
    expect(other.credential).toBe(byName.credential);
    expect(endpoints.credential).toBe(byName.credential);
    expect('credential' in bus && bus.credential).toBe(byName.credential);
    expect(withStorageCredential({ connectionString: 'UseDevelopmentStorage=true' })).not.toHaveProperty('credential');
    expect(
      withServiceBusCredential({ connectionString: 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=x' }),
    ).not.toHaveProperty('credential');
  });
});

describe('workflow doctor: the workload identity line', () => {
  const config = configFromFlags({ prefix: 'myacct/Proj' }, {});
  it('names the variables that are set, never their values', () => {
    const check = configCheck(config, {
      AZURE_CLIENT_ID: CLIENT_ID,
      AZURE_TENANT_ID: TENANT,
      AZURE_FEDERATED_TOKEN_FILE: '/var/run/secrets/azure/tokens/azure-identity-token',
    });
    expect(check.status).toBe('ok');
    expect(check.message).toContain('workload identity: set (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE)');
    expect(check.message).not.toContain(CLIENT_ID);
    expect(check.message).not.toContain('azure-identity-token');
  });
  it('says when it is not set, and warns when it is half set', () => {
    expect(configCheck(config, {}).message).toContain('workload identity: not set');
    const half = configCheck(config, { AZURE_CLIENT_ID: CLIENT_ID });
    expect(half).toMatchObject({
      status: 'warn',
      message: expect.stringContaining(
        'workload identity: incomplete (set: AZURE_CLIENT_ID; missing: AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE)',
      ),
    });
    expect(half.hint).toContain('azure.workload.identity/client-id');
  });
});
