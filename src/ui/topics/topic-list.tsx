import { useId } from 'react';
import { ErrorMessage } from '../components/error-message';
import { formatAge } from '../format';
import { href } from '../router';
import { describeManager, useTopicConfigs, useTopicSchemas, type TopicConfig, type TopicSchema } from './api';

/** A setting as the table shows it: what null (the default) and 0 mean for that very setting. */
const setting = (n: number | null | undefined, unset: string, zero = '0') => (n === null || n === undefined ? unset : n === 0 ? zero : n.toLocaleString());
const seconds = (n: number | null | undefined, zero: string, unset = 'default') => (n === null || n === undefined ? unset : n === 0 ? zero : formatAge(n));
/** The backoff's base and cap in one cell (null: the server default); a cap means nothing while retries go at once. */
function backoff(config: TopicConfig | undefined): string {
  const base = config?.retry_backoff_seconds ?? null;
  const cap = config?.retry_backoff_max_seconds ?? null;
  if (base === 0) return 'at once';
  if (base === null && cap === null) return 'default';
  const text = (n: number | null) => (n === null ? 'default' : formatAge(n));
  return `${text(base)}, capped at ${text(cap)}`;
}

/** Every topic with a configuration or a schema, one row each. */
export function TopicList(props: { current: string }) {
  const headingId = useId();
  const configs = useTopicConfigs();
  const schemas = useTopicSchemas();
  const rows = new Map<string, { config?: TopicConfig; schema?: TopicSchema }>();
  for (const c of configs.data?.items ?? []) rows.set(c.topic, { ...rows.get(c.topic), config: c });
  for (const s of schemas.data?.items ?? []) rows.set(s.topic, { ...rows.get(s.topic), schema: s });
  const topics = [...rows.keys()].sort();
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>Configured topics</h2>
      <ErrorMessage error={configs.error ?? schemas.error} />
      {configs.isPending || schemas.isPending ? (
        <p>Loading…</p>
      ) : topics.length === 0 ? (
        <p className="hint">No topic has a configuration or a schema yet: every topic uses the server defaults.</p>
      ) : (
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Topic list">
          <table>
            <thead>
              <tr>
                <th scope="col">Topic</th>
                <th scope="col" className="num">Max retries</th>
                <th scope="col" className="num">TTL</th>
                <th scope="col" className="num">Max depth</th>
                <th scope="col" className="num">Throughput limit</th>
                <th scope="col" className="num">Delivery delay</th>
                <th scope="col">Retry backoff</th>
                <th scope="col">Replay</th>
                <th scope="col">Schema</th>
                <th scope="col">Managed by</th>
              </tr>
            </thead>
            <tbody>
              {topics.map((topic) => {
                const { config, schema } = rows.get(topic)!;
                const managers = [...new Set([config?.managed_by, schema?.managed_by].flatMap((m) => (m ? [describeManager(m)] : [])))];
                return (
                  <tr key={topic}>
                    <th scope="row">
                      <a href={href('topics', { topic })} aria-current={topic === props.current ? 'true' : undefined}>
                        {topic}
                      </a>
                    </th>
                    <td className="num">{setting(config?.max_retries, 'default', '0 (off)')}</td>
                    <td className="num">{seconds(config?.message_ttl_seconds, 'never')}</td>
                    <td className="num">{setting(config?.max_depth, 'no cap')}</td>
                    <td className="num">{setting(config?.throughput_limit, 'unlimited', 'unlimited')}</td>
                    <td className="num">{seconds(config?.delivery_delay_seconds, 'none', 'none')}</td>
                    <td>{backoff(config)}</td>
                    <td>{config?.replayable ? (config.replay_window_seconds === null ? 'yes, whole log' : `yes, ${formatAge(config.replay_window_seconds)}`) : 'no'}</td>
                    <td>{schema ? `version ${schema.version}` : 'none'}</td>
                    <td>{managers.length > 0 ? managers.join(', ') : '—'}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
