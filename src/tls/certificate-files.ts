import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { X509Certificate, createHash } from 'node:crypto';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { HttpTls } from '../http/node-server.js';
import type { Logger } from '../log/logger.js';

/** Oldest protocol either port accepts (TLS 1.0 and 1.1 are deprecated by RFC 8996). */
export const MIN_TLS_VERSION = 'TLSv1.2';

/** One consistent set read from the files: a certificate chain, its key and, for mutual TLS, the client CA. */
export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  /** PEM bundle of the CA client certificates must chain to; absent: no client certificate is asked for. */
  ca?: Buffer;
}

interface Paths {
  cert: string;
  key: string;
  ca?: string;
}

/** The TLS files a configuration names, or undefined when TLS is off (load.ts already refused half a pair). */
export function tlsPaths(config: Config): Paths | undefined {
  const { tls_cert_file: cert, tls_key_file: key, tls_client_ca_file: ca } = config.server;
  if (!cert || !key) return undefined;
  return { cert, key, ca: ca || undefined };
}

/** Throws what is wrong with a set (unparsable PEM, a key that is not the certificate's), else returns it. */
function check(material: TlsMaterial): TlsMaterial {
  new X509Certificate(material.cert);
  // createSecureContext is what the servers will do with it: it refuses a key that does not match the certificate.
  createSecureContext({ cert: material.cert, key: material.key, ca: material.ca, minVersion: MIN_TLS_VERSION });
  return material;
}

function digest(material: TlsMaterial): string {
  const hash = createHash('sha256');
  for (const part of [material.cert, material.key, material.ca ?? Buffer.alloc(0)]) hash.update(part).update('\0');
  return hash.digest('hex');
}

/**
 * The certificate, key and client CA files of server.tls_*, read at start-up and polled afterwards.
 *
 * Polling re-reads the (small) files every `server.tls_reload_interval` and compares their bytes, instead of
 * fs.watch: cert-manager's Secret volumes are updated by swapping a symlink to a new directory, which inotify
 * on the file paths does not report reliably, and an in-place rewrite is seen the same way. A set that fails
 * its check (a certificate written before its key, mid-rotation) is logged once and ignored: the servers keep
 * the previous one, and the next change of the files is tried again.
 */
export class CertificateFiles {
  private current: TlsMaterial;
  /** Digest of the bytes last read, good or not: an unchanged bad set is not checked (nor warned about) again. */
  private lastSeen: string;
  /** What the last warning was about, so a problem that persists is logged once. */
  private lastRejected?: string;
  private timer?: NodeJS.Timeout;
  private polling = false;
  private readonly listeners = new Set<(material: TlsMaterial) => void>();

  private constructor(
    private readonly paths: Paths,
    private readonly logger: Logger,
    initial: TlsMaterial,
  ) {
    this.current = initial;
    this.lastSeen = digest(initial);
  }

  /** Reads and checks the files once; a configuration error names the key and the problem. */
  static load(paths: Paths, logger: Logger): CertificateFiles {
    const read = (key: string, path: string) => {
      try {
        return readFileSync(path);
      } catch (err) {
        throw new ConfigError(`invalid configuration: server.${key}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`);
      }
    };
    const material: TlsMaterial = { cert: read('tls_cert_file', paths.cert), key: read('tls_key_file', paths.key) };
    if (paths.ca) material.ca = read('tls_client_ca_file', paths.ca);
    try {
      check(material);
    } catch (err) {
      throw new ConfigError(`invalid configuration: server.tls_cert_file, server.tls_key_file${paths.ca ? ', server.tls_client_ca_file' : ''}: ${(err as Error).message}`);
    }
    const files = new CertificateFiles(paths, logger, material);
    files.logLoaded('TLS certificate loaded');
    return files;
  }

  get material(): TlsMaterial {
    return this.current;
  }

  get mutual(): boolean {
    return this.paths.ca !== undefined;
  }

  /** Called with every new set that passed its check (not with the one loaded at start-up). */
  onChange(listener: (material: TlsMaterial) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Starts polling every `intervalSeconds`; 0 keeps what was read at start-up. */
  watch(intervalSeconds: number): void {
    if (intervalSeconds <= 0 || this.timer) return;
    this.timer = setInterval(() => void this.poll(), intervalSeconds * 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.listeners.clear();
  }

  /** One look at the files (what the timer runs). */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      let material: TlsMaterial;
      try {
        const [cert, key, ca] = await Promise.all([readFile(this.paths.cert), readFile(this.paths.key), this.paths.ca ? readFile(this.paths.ca) : undefined]);
        material = ca ? { cert, key, ca } : { cert, key };
      } catch (err) {
        // A file missing for a moment (removed before its replacement is written): warn once, keep serving.
        this.rejected(`read:${(err as NodeJS.ErrnoException).code}`, err as Error, 'TLS files could not be read; still serving the previous certificate');
        return;
      }
      if (this.lastRejected?.startsWith('read:')) this.lastRejected = undefined;
      const seen = digest(material);
      if (seen === this.lastSeen) return;
      this.lastSeen = seen;
      try {
        check(material);
      } catch (err) {
        this.rejected(seen, err as Error, 'TLS files changed but do not form a valid certificate and key; still serving the previous certificate');
        return;
      }
      this.current = material;
      this.lastRejected = undefined;
      this.logLoaded('TLS certificate reloaded');
      for (const listener of this.listeners) {
        try {
          listener(material);
        } catch (err) {
          this.logger.warn({ err }, 'a server did not take the reloaded TLS certificate; it keeps the previous one');
        }
      }
    } finally {
      this.polling = false;
    }
  }

  private rejected(what: string, err: Error, message: string): void {
    if (this.lastRejected === what) return;
    this.lastRejected = what;
    // The reason is OpenSSL's or the file system's message (e.g. "key values mismatch"), never file contents.
    this.logger.warn({ certFile: this.paths.cert, keyFile: this.paths.key, caFile: this.paths.ca ?? null, reason: err.message }, message);
  }

  private logLoaded(message: string): void {
    const x509 = new X509Certificate(this.current.cert);
    this.logger.info({ subject: x509.subject, serial: x509.serialNumber, notAfter: x509.validTo, fingerprint256: x509.fingerprint256, mutualTls: this.mutual }, message);
    if (Date.parse(x509.validTo) < Date.now()) this.logger.warn({ notAfter: x509.validTo }, 'the TLS certificate has expired');
  }
}

/** Options of tls.Server.setSecureContext / https.createServer for a set. */
export function secureContextOptions(material: TlsMaterial): SecureContextOptions {
  return { cert: material.cert, key: material.key, ca: material.ca, minVersion: MIN_TLS_VERSION };
}

/**
 * A connection that has not finished its handshake by then is closed (node waits 120 s): it is not counted
 * as a connection of the HTTP server yet, so nothing else limits how long it may hold a socket.
 */
const HANDSHAKE_TIMEOUT_MS = 10_000;

/** TLS of the HTTP port (node-server.ts's HttpTls): a client certificate is demanded when there is a client CA. */
export function httpTls(files: CertificateFiles): HttpTls {
  return {
    options: { ...secureContextOptions(files.material), requestCert: files.mutual, rejectUnauthorized: true, handshakeTimeout: HANDSHAKE_TIMEOUT_MS },
    onChange: (apply) => void files.onChange((material) => apply(secureContextOptions(material))),
  };
}
