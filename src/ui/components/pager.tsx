import { useEffect, useRef } from 'react';

/** Paging over the API's limit/offset: "41-60 of 312" with previous and next; nothing for an empty list. */
export function Pager(props: { total: number; limit: number; offset: number; onChange: (offset: number) => void; label?: string }) {
  const { total, limit, offset } = props;
  // "Previous 0–0 of 0 Next" says nothing the list's own "No messages" does not.
  if (total === 0) return null;
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

/** The offset of the last page that holds anything: floor((total - 1) / limit) pages in, 0 when empty. */
export function lastPageOffset(total: number, limit: number): number {
  return total <= 0 ? 0 : Math.floor((total - 1) / limit) * limit;
}

/**
 * A page past the end (its only items requeued, deleted or reaped while it was shown) comes back empty with
 * a total that is still above 0: "No messages" and "51–50 of 50" would then stand, so `move` is called with
 * the last page that exists. `current` is false while the page shown is a placeholder from another offset.
 */
export function useBackToLastPage(page: { items: readonly unknown[]; total: number } | undefined, current: boolean, offset: number, limit: number, move: (offset: number) => void): void {
  const target = page && current && page.items.length === 0 && page.total > 0 && offset > 0 ? lastPageOffset(page.total, limit) : null;
  // The latest move, read in the effect: the callers' closures are new on every render.
  const moveRef = useRef(move);
  moveRef.current = move;
  useEffect(() => {
    if (target !== null && target !== offset) moveRef.current(target);
  }, [target, offset]);
}
