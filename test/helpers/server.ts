import { spawn, type ChildProcess } from 'node:child_process';
import type { Knex } from 'knex';
import { validateConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { createLogger, type Logger } from '../../src/log/logger.js';
import { startServer, type RunningServer } from '../../src/server.js';
import type { Engine, TestDatabase } from './engines.js';
import { conveyorArgs } from './conveyor-command.js';
import { Api } from './http.js';

export type ConfigOverrides = { [S in keyof Config]?: Partial<Record<keyof Config[S], unknown>> };

export interface TestServer {
  api: Api;
  url: string;
  db: Knex;
  server: RunningServer;
  close(): Promise<void>;
}

export interface TestClock {
  now: () => number;
  advance(ms: number): void;
}

/** A clock that starts at real time and moves only when told, for TTL, visibility and token tests. */
export function manualClock(start = Date.now()): TestClock {
  let current = start;
  return { now: () => current, advance: (ms) => void (current += ms) };
}

export function testConfig(dbUrl: string, overrides: ConfigOverrides = {}): Config {
  const tree: Record<string, Record<string, unknown>> = {
    server: { http_port: 0, grpc_port: 0, host: '127.0.0.1', shutdown_timeout: '5s' },
    db: { url: dbUrl },
    log: { level: 'silent' },
    queue: { config_refresh_interval: '200ms' },
  };
  for (const [section, values] of Object.entries(overrides)) tree[section] = { ...(tree[section] ?? {}), ...values };
  return validateConfig(tree);
}

/** Starts a real server in this process on an ephemeral port, over `database` (or a fresh one). */
export async function startTestServer(
  engine: Engine,
  options: { overrides?: ConfigOverrides; database?: TestDatabase; now?: () => number; logger?: Logger } = {},
): Promise<TestServer & { database: TestDatabase }> {
  const database = options.database ?? (await engine.createDatabase());
  const ownsDatabase = options.database === undefined;
  const config = testConfig(database.url, options.overrides);
  const server = await startServer(config, { logger: options.logger ?? createLogger('silent'), now: options.now }).catch(async (err: unknown) => {
    // A start refused after the migrations ran (one a test expects) leaves no database of its own behind.
    if (ownsDatabase) await database.drop();
    throw err;
  });
  const url = `http://127.0.0.1:${server.httpPort}`;
  return {
    api: new Api(url),
    url,
    db: server.db,
    server,
    database,
    close: async () => {
      await server.close();
      if (ownsDatabase) await database.drop();
    },
  };
}

export interface ChildServer {
  api: Api;
  url: string;
  process: ChildProcess;
  output: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `conveyor serve` as a separate OS process (compiled), for multi-instance and shutdown tests; `nodeArgs` go to node (a preload). */
export async function startChildServer(env: Record<string, string>, args: string[] = ['serve'], nodeArgs: string[] = []): Promise<ChildServer> {
  const child = spawn(process.execPath, conveyorArgs(args, nodeArgs), {
    env: {
      ...process.env,
      CONVEYOR_SERVER_HTTP_PORT: '0',
      CONVEYOR_SERVER_GRPC_PORT: '0',
      CONVEYOR_SERVER_HOST: '127.0.0.1',
      CONVEYOR_LOG_LEVEL: 'info',
      CONVEYOR_QUEUE_CONFIG_REFRESH_INTERVAL: '200ms',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 110_000);
    const onData = () => {
      const match = /"httpPort":(\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    api: new Api(url),
    url,
    process: child,
    output: () => output,
    stop: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill(signal);
      }),
  };
}
