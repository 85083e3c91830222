import type { Knex } from 'knex';
import * as initial from './20261122000000_initial.js';

interface Migration {
  up(db: Knex): Promise<void>;
  down(db: Knex): Promise<void>;
}

// Listed here rather than discovered on disk so the same list works from src/ (tsx, vitest) and dist/.
const migrations: Record<string, Migration> = {
  '20261122000000_initial': initial,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name],
};
