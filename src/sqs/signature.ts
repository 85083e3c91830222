import { createHash, createHmac, timingSafeEqual, type Hash, type Hmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { SqsError } from './errors.js';

/**
 * AWS Signature Version 4 of a request, verified by signing it again with the secret of the access key it
 * names (the AWS SDK's own signer, @smithy/signature-v4), over the headers the client says it signed, and
 * comparing the two signatures. Region and service are whatever the client signed for.
 */

/** How far a request's X-Amz-Date may be from the service's clock, as AWS allows. */
const MAX_SKEW_MS = 15 * 60 * 1000;

const AUTHORIZATION = /^AWS4-HMAC-SHA256\s+Credential=([^/\s,]+)\/(\d{8})\/([^/\s,]+)\/([^/\s,]+)\/aws4_request,\s*SignedHeaders=([a-z0-9;_.-]+),\s*Signature=([0-9a-f]{64})\s*$/i;

export interface SignedRequest {
  accessKeyId: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
  date: Date;
}

const incomplete = (message: string) => new SqsError('IncompleteSignature', message, 400);

/** What the Authorization header claims; MissingAuthenticationToken without one. */
export function parseSignedRequest(headers: IncomingHttpHeaders, now: number): SignedRequest {
  const header = headers.authorization;
  if (!header) throw new SqsError('MissingAuthenticationToken', 'Request is missing Authentication Token', 403);
  const match = AUTHORIZATION.exec(header);
  if (!match) throw incomplete('Authorization header requires AWS4-HMAC-SHA256 with Credential, SignedHeaders and Signature.');
  const [, accessKeyId, shortDate, region, service, signedHeaders, signature] = match;
  const amzDate = headers['x-amz-date'];
  const dated = typeof amzDate === 'string' ? /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate) : null;
  if (!dated || !(amzDate as string).startsWith(shortDate)) throw incomplete('X-Amz-Date is missing or does not match the credential scope.');
  const date = new Date(Date.UTC(+dated[1], +dated[2] - 1, +dated[3], +dated[4], +dated[5], +dated[6]));
  if (Number.isNaN(date.getTime())) throw incomplete('X-Amz-Date is not a valid date.');
  if (Math.abs(now - date.getTime()) > MAX_SKEW_MS) throw new SqsError('RequestExpired', 'Signature expired: the request time is too far from the service time.', 400);
  const names = signedHeaders.toLowerCase().split(';');
  if (!names.includes('host')) throw incomplete('SignedHeaders must include host.');
  return { accessKeyId, region, service, signedHeaders: names, signature: signature.toLowerCase(), date };
}

type SourceData = string | ArrayBuffer | ArrayBufferView;

const bytesOf = (data: SourceData): Buffer =>
  typeof data === 'string' ? Buffer.from(data, 'utf8') : ArrayBuffer.isView(data) ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.from(data);

/** SHA-256 and HMAC-SHA256 as the signer's hash constructor (`new Sha256(secret?)`), on node:crypto. */
class Sha256 {
  private hash: Hash | Hmac;

  private readonly secret: Buffer | undefined;

  constructor(secret?: SourceData) {
    this.secret = secret === undefined ? undefined : bytesOf(secret);
    this.hash = this.fresh();
  }

  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', this.secret);
  }

  update(data: SourceData): void {
    this.hash.update(bytesOf(data));
  }

  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.hash.digest()));
  }

  reset(): void {
    this.hash = this.fresh();
  }
}

export interface RequestToVerify {
  method: string;
  /** The path as sent, without the query. */
  path: string;
  query: Record<string, string | string[]>;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** Whether `signed.signature` is the signature of the request under `secret`. */
export async function signatureMatches(request: RequestToVerify, signed: SignedRequest, secret: string): Promise<boolean> {
  const headers: Record<string, string> = {};
  for (const name of signed.signedHeaders) {
    const value = request.headers[name];
    if (value === undefined) return false;
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(request.query)) query[name] = value;
  const host = headers.host ?? '';
  const toSign = new HttpRequest({ method: request.method, protocol: 'https:', hostname: host, path: request.path, query, headers, body: request.body });
  const signer = new SignatureV4({
    credentials: { accessKeyId: signed.accessKeyId, secretAccessKey: secret },
    region: signed.region,
    service: signed.service,
    sha256: Sha256,
    // The client's headers only: the signer must not add an x-amz-content-sha256 the client did not sign.
    applyChecksum: false,
  });
  const resigned = await signer.sign(toSign, { signingDate: signed.date, signableHeaders: new Set(signed.signedHeaders), signingRegion: signed.region, signingService: signed.service });
  const computed = /Signature=([0-9a-f]{64})/.exec(String(resigned.headers.authorization ?? resigned.headers.Authorization))?.[1];
  if (!computed) return false;
  return timingSafeEqual(Buffer.from(computed), Buffer.from(signed.signature.padEnd(64, '0').slice(0, 64)));
}
