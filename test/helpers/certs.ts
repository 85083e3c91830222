import { execFileSync } from 'node:child_process';
import { X509Certificate, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A certificate and its key as PEM files and as bytes. */
export interface Issued {
  certPath: string;
  keyPath: string;
  cert: Buffer;
  key: Buffer;
  /** As tls.TLSSocket#getPeerCertificate() and X509Certificate print it: upper-case hex. */
  serial: string;
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: 'pipe', timeout: 20_000 });
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function loaded(certPath: string, keyPath: string): Issued {
  const cert = readFileSync(certPath);
  return { certPath, keyPath, cert, key: readFileSync(keyPath), serial: new X509Certificate(cert).serialNumber };
}

/**
 * A throw-away PKI made with the openssl CLI at test time: a CA, server certificates for localhost/127.0.0.1
 * and client certificates it signs, and self-signed certificates no one trusts. EC P-256 keys (fast to make).
 */
export class TestPki {
  readonly ca: Issued;

  constructor(private readonly dir: string, name = 'Conveyor Test CA') {
    const certPath = join(dir, `${slug(name)}.crt`);
    const keyPath = join(dir, `${slug(name)}.key`);
    openssl(['req', '-x509', ...EC_KEY, '-days', '2', '-subj', `/CN=${name}`, '-keyout', keyPath, '-out', certPath,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
    this.ca = loaded(certPath, keyPath);
  }

  /** A certificate signed by the CA: `server` for localhost and 127.0.0.1, `client` for client authentication. */
  issue(name: string, usage: 'server' | 'client'): Issued {
    const base = join(this.dir, slug(name));
    openssl(['req', '-new', ...EC_KEY, '-subj', `/CN=${name}`, '-keyout', `${base}.key`, '-out', `${base}.csr`]);
    const extensions = usage === 'server'
      ? 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n'
      : 'extendedKeyUsage=clientAuth\n';
    writeFileSync(`${base}.ext`, `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n${extensions}`);
    openssl(['x509', '-req', '-in', `${base}.csr`, '-CA', this.ca.certPath, '-CAkey', this.ca.keyPath, '-set_serial', `0x${randomBytes(8).toString('hex')}`,
      '-days', '2', '-extfile', `${base}.ext`, '-out', `${base}.crt`]);
    return loaded(`${base}.crt`, `${base}.key`);
  }

  /** A self-signed certificate that no CA of this PKI vouches for. */
  static selfSigned(dir: string, name: string): Issued {
    const base = join(dir, slug(name));
    openssl(['req', '-x509', ...EC_KEY, '-days', '2', '-subj', `/CN=${name}`, '-keyout', `${base}.key`, '-out', `${base}.crt`,
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-addext', 'extendedKeyUsage=clientAuth,serverAuth']);
    return loaded(`${base}.crt`, `${base}.key`);
  }
}

function slug(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '-');
}
