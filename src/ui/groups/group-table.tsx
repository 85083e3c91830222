import { formatNumber } from '../format';
import { describeManager, type ManagedBy } from '../topics/api';

/** Delivery statuses of a group, in the order a message moves through them. */
const STATUSES = ['pending', 'processing', 'failed', 'expired'];

export function GroupTable(props: {
  groups: string[];
  depths: Map<string, Map<string, number>>;
  managers: Map<string, ManagedBy | null>;
  onUnregister: (group: string) => void;
}) {
  const extra = [...new Set([...props.depths.values()].flatMap((m) => [...m.keys()]))].filter((s) => !STATUSES.includes(s)).sort();
  const statuses = [...STATUSES, ...extra];
  return (
    <div className="table-wrap groups-table-wrap">
      <table>
        <caption className="table-caption">Deliveries of each group by status</caption>
        <thead>
          <tr>
            <th scope="col">Group</th>
            {statuses.map((s) => (
              <th scope="col" className="num" key={s}>
                {s}
              </th>
            ))}
            <th scope="col">Managed by</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {props.groups.map((group) => {
            const manager = props.managers.get(group) ?? null;
            return (
              <tr key={group}>
                <th scope="row">{group}</th>
                {statuses.map((s) => (
                  <td className="num" key={s}>
                    {formatNumber(props.depths.get(group)?.get(s) ?? 0)}
                  </td>
                ))}
                <td>{manager ? describeManager(manager) : '—'}</td>
                <td>
                  {!manager && (
                    <button type="button" onClick={() => props.onUnregister(group)} aria-label={`Unregister ${group}`}>
                      Unregister
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
