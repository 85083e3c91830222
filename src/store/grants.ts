import type { Knex } from 'knex';

export interface GrantRow {
  id: string;
  user_id: string;
  action: string;
  topic_pattern: string;
  consumer_group: string;
  created_at: number;
}

function normalise(raw: Record<string, unknown>): GrantRow {
  return {
    id: String(raw.id),
    user_id: String(raw.user_id),
    action: String(raw.action),
    topic_pattern: String(raw.topic_pattern),
    consumer_group: String(raw.consumer_group ?? ''),
    created_at: Number(raw.created_at),
  };
}

export async function listGrants(db: Knex, userId: string): Promise<GrantRow[]> {
  return (await db('grants').where({ user_id: userId }).select('*').orderBy(['created_at', 'id'])).map(normalise);
}

/** Throws the engine's unique violation for a duplicate (user, action, pattern, group); the caller maps it. */
export async function insertGrant(db: Knex, row: GrantRow): Promise<void> {
  await db('grants').insert({ ...row });
}

/** Scoped to the user, so a grant id of another user deletes nothing (spec: 404). */
export async function deleteGrant(db: Knex, userId: string, grantId: string): Promise<boolean> {
  return (await db('grants').where({ id: grantId, user_id: userId }).delete()) > 0;
}
