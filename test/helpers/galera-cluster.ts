import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, chmodSync, constants, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, delimiter, join } from 'node:path';
import mysql from 'mysql2/promise';
import { freePorts } from './free-ports.js';
import type { ExternalComponent } from './external-components.js';

/**
 * A real three-node MariaDB Galera cluster on loopback, for the suites that prove what Conveyor promises on a
 * highly available database (test/galera-*.test.ts) and for the Galera benchmark (bench/galera.ts). Each node
 * is a `mariadbd` of its own (datadir, socket, SQL port, group port, IST and SST ports) under one temp
 * directory; the cluster is torn down by PID.
 */

const MARIADBD = '/usr/sbin/mariadbd';
const INSTALL_DB = '/usr/bin/mariadb-install-db';
const PROVIDER = '/usr/lib/galera/libgalera_smm.so';

/** Every wait here is bounded: a node joining by full state transfer (SST) takes about 10 s on this machine. */
const READY_TIMEOUT_MS = 90_000;
const EXIT_TIMEOUT_MS = 30_000;
const POLL_MS = 150;

const isRoot = process.getuid?.() === 0;

/** The program's path on PATH, or undefined. */
function which(program: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      accessSync(join(dir, program), constants.X_OK);
      return join(dir, program);
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Why a Galera cluster cannot run on this machine, or undefined when it can. */
export function galeraMissing(): string | undefined {
  const missing = [MARIADBD, INSTALL_DB, PROVIDER].filter((file) => !existsSync(file));
  for (const program of ['rsync', 'wsrep_sst_rsync']) if (!which(program)) missing.push(program);
  return missing.length ? `Galera suites need MariaDB, galera-4 and rsync; missing: ${missing.join(', ')} (apt-get install galera-4 rsync)` : undefined;
}

export interface GaleraNode {
  /** 0-based; the node's wsrep name is `node${index + 1}`. */
  index: number;
  /** The SQL port on 127.0.0.1. */
  port: number;
  /** `mysql://root@127.0.0.1:<port>` (no database). */
  url: string;
  /** The running mariadbd's PID; undefined while the node is down. */
  pid: number | undefined;
}

export interface GaleraDatabase {
  name: string;
  /** `mysql://root@127.0.0.1:<port of node i>/<name>`. */
  urlOn(index: number): string;
  drop(): Promise<void>;
}

export interface GaleraCluster {
  nodes: GaleraNode[];
  /** The temp directory holding every node's datadir and error log. */
  dir: string;
  /** A fresh database (created through the first running node, replicated to all). */
  createDatabase(): Promise<GaleraDatabase>;
  /** SIGKILL: the node dies as in a crash or an OOM kill; returns once the process is gone. */
  kill(index: number): Promise<void>;
  /** SIGTERM and wait for the node to leave the cluster cleanly. */
  stop(index: number): Promise<void>;
  /** Starts a stopped or killed node again; it rejoins (IST from a peer's gcache) and is back once Synced. */
  restart(index: number): Promise<void>;
  /** Waits until every running node is Synced in a primary component of that many nodes. */
  waitSynced(): Promise<void>;
  /** `SHOW GLOBAL STATUS LIKE 'wsrep_%'` of one node. */
  status(index: number): Promise<Record<string, string>>;
  /** The last lines of a node's error log, for a failure message. */
  logTail(index: number, lines?: number): string;
  /** Kills every node by PID and removes the temp directory. */
  stopAll(): Promise<void>;
}

interface NodePorts {
  sql: number;
  group: number;
  ist: number;
  sst: number;
}

/** Runs a program to completion within a time bound; rejects with its output on failure. */
function run(program: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`${basename(program)} exited with ${code ?? signal}:\n${output.slice(-2000)}`));
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every mariadbd this process started, and their directories, so a crashed test file leaves nothing behind. */
const livePids = new Set<number>();
const liveDirs = new Set<string>();
process.once('exit', () => {
  for (const pid of livePids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * As root, mariadbd needs --user=root, and rsync's daemon (the joiner's end of an SST) would switch to
 * "nobody", who cannot write a root-owned datadir. The SST method `rsync_root` is the stock rsync script
 * run with an `rsync` in front of the real one that keeps the daemon's uid.
 */
function writeSstShim(dir: string): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const rsync = which('rsync')!;
  writeFileSync(
    join(bin, 'rsync'),
    `#!/bin/sh\nif [ "$1" = "--daemon" ]; then exec ${rsync} --dparam=uid=root --dparam=gid=root "$@"; fi\nexec ${rsync} "$@"\n`,
  );
  writeFileSync(join(dir, 'wsrep_sst_rsync_root'), `#!/bin/sh\nPATH="${bin}:$PATH" exec ${which('wsrep_sst_rsync')!} "$@"\n`);
  chmodSync(join(bin, 'rsync'), 0o755);
  chmodSync(join(dir, 'wsrep_sst_rsync_root'), 0o755);
  return dir;
}

/**
 * The ports are free when chosen, but nothing holds them until each mariadbd binds its own; should another
 * process take one meanwhile, the cluster is started afresh on other ports (twice at most).
 */
export async function startGaleraCluster(options: { nodes?: number } = {}): Promise<GaleraCluster> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreshPorts(options);
    } catch (err) {
      if (attempt === 3 || !/Address already in use/.test((err as Error).message)) throw err;
    }
  }
}

async function startOnFreshPorts(options: { nodes?: number }): Promise<GaleraCluster> {
  const missing = galeraMissing();
  if (missing) throw new Error(missing);
  const count = options.nodes ?? 3;
  const dir = mkdtempSync(join(tmpdir(), 'conveyor-galera-'));
  liveDirs.add(dir);
  const shim = isRoot ? writeSstShim(join(dir, 'sst')) : undefined;
  // rsync lives in /usr/bin, which mariadbd puts first on the SST script's PATH: the shim goes by method name.
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: shim ? `${shim}${delimiter}${process.env.PATH ?? ''}` : process.env.PATH };
  const flat = await freePorts(count * 4);
  const ports: NodePorts[] = Array.from({ length: count }, (_, i) => ({ sql: flat[i * 4], group: flat[i * 4 + 1], ist: flat[i * 4 + 2], sst: flat[i * 4 + 3] }));
  const gcomm = `gcomm://${ports.map((p) => `127.0.0.1:${p.group}`).join(',')}`;
  const children: Array<ChildProcess | undefined> = new Array(count).fill(undefined);
  const nodes: GaleraNode[] = ports.map((p, index) => ({ index, port: p.sql, url: `mysql://root@127.0.0.1:${p.sql}`, pid: undefined }));
  const nodeDir = (i: number) => join(dir, `node${i + 1}`);
  const dataDir = (i: number) => join(nodeDir(i), 'data');
  const errorLog = (i: number) => join(nodeDir(i), 'error.log');

  const serverArgs = (i: number): string[] => {
    const p = ports[i];
    return [
      '--no-defaults',
      ...(isRoot ? ['--user=root'] : []),
      `--datadir=${dataDir(i)}`,
      `--socket=${join(nodeDir(i), 'mysqld.sock')}`,
      `--pid-file=${join(nodeDir(i), 'mysqld.pid')}`,
      `--log-error=${errorLog(i)}`,
      `--port=${p.sql}`,
      '--bind-address=127.0.0.1',
      '--skip-name-resolve',
      '--wsrep_on=ON',
      `--wsrep_provider=${PROVIDER}`,
      `--wsrep_cluster_address=${gcomm}`,
      '--wsrep_cluster_name=conveyor-test',
      `--wsrep_node_name=node${i + 1}`,
      `--wsrep_node_address=127.0.0.1:${p.group}`,
      `--wsrep_node_incoming_address=127.0.0.1:${p.sql}`,
      `--wsrep_provider_options=gmcast.listen_addr=tcp://127.0.0.1:${p.group};ist.recv_addr=127.0.0.1:${p.ist};gcache.size=128M`,
      `--wsrep_sst_receive_address=127.0.0.1:${p.sst}`,
      `--wsrep_sst_method=${shim ? 'rsync_root' : 'rsync'}`,
      '--binlog_format=ROW',
      '--default_storage_engine=InnoDB',
      '--innodb_autoinc_lock_mode=2',
      // Small: two cores and other test files run beside three nodes.
      '--innodb_buffer_pool_size=64M',
      '--innodb_log_file_size=48M',
      // Galera's usual setting: durability comes from the other nodes; a killed process loses nothing
      // (the log is written at commit, flushed once a second).
      '--innodb_flush_log_at_trx_commit=2',
      '--performance_schema=OFF',
      '--max_connections=400',
    ];
  };

  const spawnNode = (i: number, extra: string[] = []) => {
    const child = spawn(MARIADBD, [...serverArgs(i), ...extra], { env, stdio: 'ignore' });
    child.once('error', () => {});
    children[i] = child;
    nodes[i].pid = child.pid;
    if (child.pid !== undefined) livePids.add(child.pid);
    child.once('exit', () => {
      if (child.pid !== undefined) livePids.delete(child.pid);
      if (children[i] === child) {
        children[i] = undefined;
        nodes[i].pid = undefined;
      }
    });
  };

  const logTail = (i: number, lines = 40) => {
    try {
      return readFileSync(errorLog(i), 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no error log)';
    }
  };

  const status = async (i: number): Promise<Record<string, string>> => {
    const conn = await mysql.createConnection({ host: '127.0.0.1', port: ports[i].sql, user: 'root', connectTimeout: 2000 });
    try {
      const [rows] = await conn.query("SHOW GLOBAL STATUS LIKE 'wsrep_%'");
      return Object.fromEntries((rows as Array<{ Variable_name: string; Value: string }>).map((r) => [r.Variable_name, r.Value]));
    } finally {
      await conn.end().catch(() => {});
    }
  };

  const running = () => nodes.filter((n) => n.pid !== undefined).map((n) => n.index);

  /** Node i answers over TCP, is Synced and sees a primary component of `size` nodes. */
  const waitNode = async (i: number, size: number): Promise<void> => {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let last = 'no answer';
    while (Date.now() < deadline) {
      if (children[i] === undefined) throw new Error(`galera node${i + 1} exited while starting:\n${logTail(i)}`);
      try {
        const s = await status(i);
        last = `ready=${s.wsrep_ready} state=${s.wsrep_local_state_comment} cluster=${s.wsrep_cluster_status} size=${s.wsrep_cluster_size}`;
        if (s.wsrep_ready === 'ON' && s.wsrep_local_state_comment === 'Synced' && s.wsrep_cluster_status === 'Primary' && Number(s.wsrep_cluster_size) === size) return;
      } catch (err) {
        last = (err as Error).message;
      }
      await sleep(POLL_MS);
    }
    throw new Error(`galera node${i + 1} not synced within ${READY_TIMEOUT_MS / 1000}s (${last}):\n${logTail(i)}`);
  };

  const waitSynced = async () => {
    const up = running();
    await Promise.all(up.map((i) => waitNode(i, up.length)));
  };

  const waitExit = async (i: number, signal: NodeJS.Signals): Promise<void> => {
    const child = children[i];
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), EXIT_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };

  /**
   * After a crash grastate.dat says seqno -1; like the service scripts (galera_recovery) and the operators,
   * recover the last committed position from InnoDB first, so the node rejoins by IST, not a full SST.
   */
  const recoveredPosition = async (i: number): Promise<string | undefined> => {
    const grastate = existsSync(join(dataDir(i), 'grastate.dat')) ? readFileSync(join(dataDir(i), 'grastate.dat'), 'utf8') : '';
    if (!/seqno:\s+-1/.test(grastate)) return undefined;
    const log = join(nodeDir(i), 'recover.log');
    rmSync(log, { force: true });
    await run(MARIADBD, [...serverArgs(i), `--log-error=${log}`, '--wsrep-recover'], env, 60_000);
    return /Recovered position: (\S+:-?\d+)/.exec(readFileSync(log, 'utf8'))?.[1];
  };

  const cluster: GaleraCluster = {
    nodes,
    dir,
    status,
    logTail,
    waitSynced,
    async createDatabase() {
      const via = running()[0];
      if (via === undefined) throw new Error('no galera node is running');
      const name = `conveyor_g_${randomBytes(6).toString('hex')}`;
      const admin = async (sql: string) => {
        const conn = await mysql.createConnection({ host: '127.0.0.1', port: ports[running()[0] ?? via].sql, user: 'root' });
        try {
          await conn.query(sql);
        } finally {
          await conn.end().catch(() => {});
        }
      };
      await admin(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
      return {
        name,
        urlOn: (i) => `mysql://root@127.0.0.1:${ports[i].sql}/${name}`,
        drop: () => admin(`DROP DATABASE IF EXISTS \`${name}\``),
      };
    },
    kill: (i) => waitExit(i, 'SIGKILL'),
    stop: (i) => waitExit(i, 'SIGTERM'),
    async restart(i) {
      if (children[i]) throw new Error(`galera node${i + 1} is running`);
      // As a restarted pod would, come back once the others have evicted the dead node (evs.suspect_timeout,
      // 5 s): a node rejoining under the address its old self still holds in their view waits far longer.
      await waitSynced();
      const position = await recoveredPosition(i);
      spawnNode(i, position ? [`--wsrep_start_position=${position}`] : []);
      await waitNode(i, running().length);
    },
    async stopAll() {
      // The data is thrown away: no clean shutdown needed.
      await Promise.all(nodes.map((n) => waitExit(n.index, 'SIGKILL')));
      rmSync(dir, { recursive: true, force: true });
      liveDirs.delete(dir);
    },
  };

  try {
    for (let i = 0; i < count; i++) mkdirSync(nodeDir(i), { recursive: true });
    await run(
      INSTALL_DB,
      ['--no-defaults', `--datadir=${dataDir(0)}`, '--auth-root-authentication-method=normal', '--skip-test-db', ...(isRoot ? ['--user=root'] : [])],
      env,
      60_000,
    );
    // Bootstrap once and stop cleanly, so grastate.dat names the cluster; copies of that datadir then join
    // by IST at once instead of a full state transfer each.
    spawnNode(0, ['--wsrep-new-cluster']);
    await waitNode(0, 1);
    await waitExit(0, 'SIGTERM');
    for (let i = 1; i < count; i++) {
      cpSync(dataDir(0), dataDir(i), { recursive: true, filter: (src) => !/(galera\.cache|gvwstate\.dat)$/.test(src) });
    }
    spawnNode(0, ['--wsrep-new-cluster']);
    await waitNode(0, 1);
    for (let i = 1; i < count; i++) spawnNode(i);
    await waitSynced();
    return cluster;
  } catch (err) {
    await cluster.stopAll();
    throw err;
  }
}

/** MariaDB with galera-4 and rsync, for `suites` (test/helpers/external-components.ts: skipped, or failed in CI). */
export const galera = (suites: string): ExternalComponent => ({
  name: 'Galera',
  suites,
  install: 'apt-get install -y mariadb-server galera-4 rsync',
  missing: galeraMissing,
});
