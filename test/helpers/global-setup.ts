import { execFileSync } from 'node:child_process';
import type { TestProject } from 'vitest/node';
import { runs, type ExternalComponent } from './external-components.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Server-level MySQL URL (no database, or one the suites ignore); "" when the MySQL suites skip. */
    mysqlUrl: string;
  }
}

function dockerWorks(): boolean {
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore', timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

/** Outside CI a Docker engine stands in for MYSQL_URL (a throwaway MySQL 8); in CI, MYSQL_URL must be set. */
const MYSQL: ExternalComponent = {
  name: 'MySQL',
  suites: 'the MySQL suites (SQLite suites run)',
  install: 'apt-get install -y mariadb-server, then MYSQL_URL=mysql://root@127.0.0.1:3306/test npm test (or start a Docker engine)',
  missing: () => (process.env.CI === 'true' ? 'MYSQL_URL is not set' : dockerWorks() ? undefined : 'MYSQL_URL is not set and no Docker engine answers'),
};

/**
 * Where the MySQL suites run: MYSQL_URL when set (CI sets it, to the machine's MariaDB); else a throwaway
 * MySQL 8 from testcontainers when a Docker engine answers; else they skip with one visible line. In CI
 * (CI=true) a missing MYSQL_URL is an error, so the MySQL suites can never skip silently there.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.MYSQL_URL) {
    project.provide('mysqlUrl', process.env.MYSQL_URL);
    return async () => {};
  }
  if (!runs(MYSQL)) {
    project.provide('mysqlUrl', '');
    return async () => {};
  }
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer('mysql:8.4')
    .withEnvironment({ MYSQL_ALLOW_EMPTY_PASSWORD: 'yes' })
    .withExposedPorts(3306)
    .withWaitStrategy(Wait.forLogMessage(/ready for connections.*port: 3306/))
    .start();
  project.provide('mysqlUrl', `mysql://root@${container.getHost()}:${container.getMappedPort(3306)}/mysql`);
  return async () => {
    await container.stop();
  };
}
