import type { TestProject } from 'vitest/node';
import { galera, startGaleraCluster } from './galera-cluster.js';
import { runs } from './external-components.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Set by the galera project: only the MySQL variant of each suite runs (its server is a Galera node). */
    mysqlOnly: boolean;
  }
}

/**
 * The `galera` project (vitest.config.ts): the messaging suites run unchanged, their MySQL variant only, with
 * `mysqlUrl` pointing at the first node of a real three-node Galera cluster, so every write they make is
 * certified and replicated. Missing binaries skip the project with one line, except in CI, where they fail it.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  project.provide('mysqlOnly', true);
  if (!runs(galera('the galera project'))) {
    project.provide('mysqlUrl', '');
    return async () => {};
  }
  const cluster = await startGaleraCluster();
  project.provide('mysqlUrl', `${cluster.nodes[0].url}/mysql`);
  return () => cluster.stopAll();
}
