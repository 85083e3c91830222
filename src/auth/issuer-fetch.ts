import { existsSync, readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rootCertificates } from 'node:tls';

/**
 * Reads the service-account issuer's discovery document and keys (JSON over HTTPS, or HTTP for a test issuer).
 * In a pod, a cluster's own issuer is the API server: its discovery endpoints want a token (any service
 * account may read them: the default ClusterRoleBinding system:service-account-issuer-discovery) and its
 * certificate is signed by the cluster's CA. So where the pod has them (the chart mounts them with
 * auth.kubernetes.enabled), the CA is trusted beside the public ones, and the pod's own token is sent, but only
 * to the API server (`bearer`): never to another host, which could replay it.
 */

export interface InClusterFiles {
  token: string;
  ca: string;
}

export const IN_CLUSTER: InClusterFiles = {
  token: '/var/run/secrets/kubernetes.io/serviceaccount/token',
  ca: '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt',
};

const FETCH_TIMEOUT_MS = 5000;
const MAX_BYTES = 1_048_576;

export type FetchJson = (url: string, options: { bearer: boolean }) => Promise<unknown>;

/**
 * The `kubernetes` Service's names (with the default cluster domain; another domain's issuer is reached through
 * auth.kubernetes_jwks_url https://kubernetes.default.svc/openid/v1/jwks) and the address kubelet tells pods.
 */
const API_SERVER_NAMES = new Set(['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local']);

/** Whether `url` is the cluster's API server as pods address it: the only host the pod's own token is sent to. */
export function isClusterApiServer(url: URL, env: NodeJS.ProcessEnv = process.env): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (API_SERVER_NAMES.has(host)) return true;
  return env.KUBERNETES_SERVICE_HOST !== undefined && env.KUBERNETES_SERVICE_HOST !== '' && host === env.KUBERNETES_SERVICE_HOST;
}

/** What a fetch sends: the CA bundle to trust and the Authorization header, from the pod's files (read each time: the kubelet rotates the token). */
export function requestOptions(url: URL, bearer: boolean, files: InClusterFiles = IN_CLUSTER): { ca?: string[]; headers: Record<string, string> } {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (url.protocol !== 'https:') return { headers };
  if (bearer && existsSync(files.token)) headers.authorization = `Bearer ${readFileSync(files.token, 'utf8').trim()}`;
  return { ca: existsSync(files.ca) ? [...rootCertificates, readFileSync(files.ca, 'utf8')] : undefined, headers };
}

export function fetchJson(url: string, options: { bearer: boolean }, files: InClusterFiles = IN_CLUSTER): Promise<unknown> {
  const target = new URL(url);
  if (target.protocol !== 'https:' && target.protocol !== 'http:') return Promise.reject(new Error(`${url}: expected an https:// or http:// URL`));
  const { ca, headers } = requestOptions(target, options.bearer, files);
  const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(target, { method: 'GET', headers, ca, timeout: FETCH_TIMEOUT_MS }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_BYTES) req.destroy(new Error(`${url}: answer larger than ${MAX_BYTES} bytes`));
        else chunks.push(chunk);
      });
      res.on('error', reject);
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`${url}: HTTP ${res.statusCode}`));
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          reject(new Error(`${url}: the answer is not JSON`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer within ${FETCH_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end();
  });
}
