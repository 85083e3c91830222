import type { SeriesStyle } from './series-style';

/** A short stretch of a topic's chart line, its colour and dash pattern, beside its name. */
export function Swatch(props: { style: SeriesStyle | undefined }) {
  if (!props.style) return null;
  return (
    <svg className="swatch" width="18" height="10" viewBox="0 0 18 10" aria-hidden="true">
      <line x1="0" y1="5" x2="18" y2="5" stroke={props.style.colour} strokeWidth="3" strokeDasharray={props.style.dash.length > 0 ? props.style.dash.join(' ') : undefined} />
    </svg>
  );
}
