/**
 * The pipeline policy that points `ServiceBusAdministrationClient` at the emulator's admin
 * endpoint. The client always builds `https://<namespace host>/<path>` URLs; the policy swaps the
 * origin for the admin endpoint's (keeping path and query) and, for an `http:` endpoint, marks the
 * request as allowed over plain HTTP (the SDK's HTTP client refuses it otherwise).
 * See README.md, "Admin endpoint".
 */

/** The part of `@azure/core-rest-pipeline`'s `PipelineRequest` the policy touches. */
export interface AdminPolicyRequest {
  url: string;
  allowInsecureConnection?: boolean;
}

/**
 * Structurally a `PipelinePolicy` of `@azure/core-rest-pipeline` (declared here so that this
 * package needs no Azure dependency at run time).
 */
export interface AdminPipelinePolicy {
  name: string;
  sendRequest<Request extends AdminPolicyRequest, Response>(
    request: Request,
    next: (request: Request) => Promise<Response>,
  ): Promise<Response>;
}

export const ADMIN_POLICY_NAME = 'jobqServiceBusEmulatorAdminPolicy';

/**
 * A policy that sends every request of the client to `adminEndpoint` (e.g. `http://127.0.0.1:5300`).
 * With @azure/service-bus 7.9.5 add it to the client's pipeline:
 * `client.pipeline.addPolicy(adminPolicy(endpoint))` (the client ignores `additionalPolicies`).
 */
export function adminPolicy(adminEndpoint: string): AdminPipelinePolicy {
  let target: URL;
  try {
    target = new URL(adminEndpoint);
  } catch {
    throw new TypeError(`adminPolicy: "${adminEndpoint}" is not a URL such as http://127.0.0.1:5300`);
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw new TypeError(`adminPolicy: "${adminEndpoint}" is not an http: or https: URL`);
  }
  const origin = target.origin;
  const prefix = target.pathname.replace(/\/+$/, '');
  const insecure = target.protocol === 'http:';
  return {
    name: ADMIN_POLICY_NAME,
    sendRequest(request, next) {
      const original = new URL(request.url);
      request.url = `${origin}${prefix}${original.pathname}${original.search}`;
      if (insecure) request.allowInsecureConnection = true;
      return next(request);
    },
  };
}
