import tls from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { MIN_TLS_VERSION, type CertificateFiles, type TlsMaterial } from './certificate-files.js';

type CertificateProvider = grpc.experimental.CertificateProvider;
type IdentityListener = grpc.experimental.IdentityCertificateUpdateListener;
type CaListener = grpc.experimental.CaCertificateUpdateListener;

/**
 * grpc-js's own rotation mechanism (a CertificateProvider behind createCertificateProviderServerCredentials:
 * the server calls setSecureContext on every update, so established connections keep their session) fed by
 * CertificateFiles. grpc-js's FileWatcherCertificateProvider is not used: it passes on whatever it reads, and
 * a certificate without its matching key (mid-rotation) or a failed read makes grpc-js drop every new
 * connection until the next good read. This one only ever reports a set that passed CertificateFiles' check.
 */
class FilesCertificateProvider implements CertificateProvider {
  private readonly identityListeners = new Set<IdentityListener>();
  private readonly caListeners = new Set<CaListener>();
  private unsubscribe?: () => void;

  constructor(private readonly files: CertificateFiles) {}

  private subscribe(): void {
    this.unsubscribe ??= this.files.onChange((material) => {
      for (const listener of this.identityListeners) listener(identity(material));
      if (material.ca) for (const listener of this.caListeners) listener({ caCertificate: material.ca });
    });
  }

  private maybeUnsubscribe(): void {
    if (this.identityListeners.size > 0 || this.caListeners.size > 0) return;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  // grpc-js adds its listeners before its own watcher: the current set is delivered on the next tick, as
  // grpc-js's FileWatcherCertificateProvider does, or the server would start without it.
  addIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.add(listener);
    this.subscribe();
    process.nextTick(() => this.identityListeners.has(listener) && listener(identity(this.files.material)));
  }

  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.delete(listener);
    this.maybeUnsubscribe();
  }

  addCaCertificateListener(listener: CaListener): void {
    this.caListeners.add(listener);
    this.subscribe();
    const ca = this.files.material.ca;
    if (ca) process.nextTick(() => this.caListeners.has(listener) && listener({ caCertificate: ca }));
  }

  removeCaCertificateListener(listener: CaListener): void {
    this.caListeners.delete(listener);
    this.maybeUnsubscribe();
  }
}

function identity(material: TlsMaterial) {
  return { certificate: material.cert, privateKey: material.key };
}

/** Plaintext without files; TLS (mutual TLS with a client CA), following the files as they change. */
export function grpcServerCredentials(files: CertificateFiles | undefined): grpc.ServerCredentials {
  if (!files) return grpc.ServerCredentials.createInsecure();
  // grpc-js builds its secure contexts from cert, key and ca alone, so their oldest protocol is node's default:
  // TLS 1.2, unless node was started with --tls-min-v1.0 or --tls-min-v1.1. Hold TLS 1.2 there too.
  if (tls.DEFAULT_MIN_VERSION === 'TLSv1' || tls.DEFAULT_MIN_VERSION === 'TLSv1.1') tls.DEFAULT_MIN_VERSION = MIN_TLS_VERSION;
  const provider = new FilesCertificateProvider(files);
  // grpc-js 1.14 declares the parameters as (ca, identity, ...) but passes them on as (identity, ca): the
  // first one is the server's own certificate, the second the client CA (null: no client certificate asked).
  return grpc.experimental.createCertificateProviderServerCredentials(provider, files.mutual ? provider : null, files.mutual);
}
