import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { expectStatus, type BenchClient } from './http-client.js';

/** Production runs with authentication on (a JWT on every request); the bench measures that first. */
export type AuthMode = 'on' | 'off';

const USER = 'bench';
const PASSWORD = randomBytes(12).toString('hex');

/** The service's environment for a mode: auth on with a fresh secret and a bootstrap admin to sign in as. */
export function authEnv(mode: AuthMode): Record<string, string> {
  if (mode === 'off') return { CONVEYOR_AUTH_ENABLED: 'false' };
  return {
    CONVEYOR_AUTH_ENABLED: 'true',
    CONVEYOR_AUTH_JWT_SECRET: randomBytes(32).toString('hex'),
    CONVEYOR_AUTH_USERNAME: USER,
    CONVEYOR_AUTH_PASSWORD: PASSWORD,
    // Access keys on: the SQS phases sign their requests with one (bench/sqs.ts).
    CONVEYOR_AUTH_CREDENTIALS_KEY: randomBytes(32).toString('base64'),
  };
}

/** The bearer token the clients send, renewed before each phase (a token lives 15 minutes). */
export class BenchToken {
  private current: string | undefined;

  constructor(private readonly mode: AuthMode) {}

  value(): string | undefined {
    return this.current;
  }

  async renew(client: BenchClient): Promise<void> {
    if (this.mode === 'off') return;
    const res = this.current === undefined ? await client.post('/api/auth/login', { username: USER, password: PASSWORD }) : await client.post('/api/auth/refresh', {});
    this.current = (JSON.parse(expectStatus(res, 200, 'sign in').body) as { token: string }).token;
  }
}

/** Adds `authorization: Bearer <token>` to every call of a gRPC client, as a user's interceptor would. */
export function grpcAuth(token: () => string | undefined): grpc.Interceptor {
  return (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        const value = token();
        if (value) metadata.set('authorization', `Bearer ${value}`);
        next(metadata, listener);
      },
    });
}
