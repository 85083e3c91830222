/** A table of an EXPLAIN or ANALYZE FORMAT=JSON plan: its name, access, key, and what ANALYZE counted. */
export interface PlanTable {
  table_name?: string;
  access_type?: string;
  key?: string;
  [k: string]: unknown;
}

/** Every `table` node of an EXPLAIN or ANALYZE FORMAT=JSON plan (MySQL and MariaDB nest them differently). */
export function tablesOf(node: unknown, out: PlanTable[] = []): PlanTable[] {
  if (Array.isArray(node)) for (const n of node) tablesOf(n, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'table' && v && typeof v === 'object' && !Array.isArray(v)) out.push(v as PlanTable);
      tablesOf(v, out);
    }
  }
  return out;
}

/** The statements of one text sent as several (`;\n`-joined, src/store/statement.ts), each with its bindings. */
export function statementsOf(text: { sql: string; bindings: unknown[] }): Array<{ sql: string; bindings: unknown[] }> {
  let at = 0;
  return text.sql.split(';\n').map((sql) => {
    const count = (sql.match(/\?/g) ?? []).length;
    const bindings = text.bindings.slice(at, at + count);
    at += count;
    return { sql, bindings };
  });
}
