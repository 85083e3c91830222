import { formatTime } from '../format';

/** A time from the API as formatTime shows it; the exact RFC 3339 value in `dateTime` and on hover. */
export function Timestamp(props: { iso: string | null | undefined }) {
  if (!props.iso) return <>—</>;
  return (
    <time dateTime={props.iso} title={props.iso}>
      {formatTime(props.iso)}
    </time>
  );
}
