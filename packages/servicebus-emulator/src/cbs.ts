/**
 * Claims-based security on `$cbs`: `put-token` requests carrying a SAS token are checked against
 * the namespace key; Entra ID (`jwt`) tokens are refused. See README.md, "Authentication".
 */
import { asString, field, plainMap, type AmqpMessage } from './amqp';
import { verifySasToken } from './sas';

export interface CbsVerdict {
  ok: boolean;
  status: number;
  description: string;
  /** The audience (`sb://host/<entity>`), when the request named one. */
  audience: string | undefined;
}

export interface CbsKey {
  keyName: string;
  key: string;
}

export function handlePutToken(request: AmqpMessage, key: CbsKey, nowMs: number): CbsVerdict {
  const props = plainMap(request.application_properties);
  const operation = asString(props.operation);
  const type = asString(props.type);
  const audience = asString(props.name);
  if (operation !== 'put-token') {
    return {
      ok: false,
      status: 400,
      description: `unsupported $cbs operation "${String(operation).slice(0, 64)}"; only put-token is supported`,
      audience,
    };
  }
  if (type === 'jwt') {
    return {
      ok: false,
      status: 401,
      description: 'Entra ID (jwt) tokens are not supported by this emulator; use a connection string with a SharedAccessKey',
      audience,
    };
  }
  if (type !== 'servicebus.windows.net:sastoken') {
    return { ok: false, status: 401, description: `unsupported token type "${String(type).slice(0, 64)}"`, audience };
  }
  const body: unknown = request.body;
  const token = typeof body === 'string' ? body : asString(field(body, 'content'));
  if (token === undefined) return { ok: false, status: 401, description: 'the put-token request carries no token', audience };
  const verdict = verifySasToken(token, key, nowMs);
  if (!verdict.ok) return { ok: false, status: 401, description: `unauthorized: ${verdict.reason}`, audience };
  return { ok: true, status: 202, description: 'Accepted', audience };
}
