/** Paging over the API's limit/offset: "41-60 of 312" with previous and next. */
export function Pager(props: { total: number; limit: number; offset: number; onChange: (offset: number) => void; label?: string }) {
  const { total, limit, offset } = props;
  const first = total === 0 ? 0 : offset + 1;
  const last = Math.min(offset + limit, total);
  return (
    <nav className="pager" aria-label={props.label ?? 'Pages'}>
      <button type="button" disabled={offset === 0} onClick={() => props.onChange(Math.max(0, offset - limit))}>
        Previous
      </button>
      <span aria-live="polite">
        {first}–{last} of {total}
      </span>
      <button type="button" disabled={offset + limit >= total} onClick={() => props.onChange(offset + limit)}>
        Next
      </button>
    </nav>
  );
}
