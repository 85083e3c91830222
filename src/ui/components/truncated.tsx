import { useLayoutEffect, useRef, useState } from 'react';

/**
 * Text kept on one line (a key, a topic, a payload preview), never broken inside a word: when it does not fit
 * it ends in an ellipsis, and the whole of `full` (default: the text) is in its title on hover. Only then is
 * it focusable, and focused it shows whole (styles.css, .truncate), so the keyboard reaches it too.
 */
export function Truncated(props: { text: string; full?: string; className?: string }) {
  const ref = useRef<HTMLSpanElement>(null);
  const [cut, setCut] = useState(false);
  useLayoutEffect(() => {
    const el = ref.current!;
    const measure = () => {
      // While focused it is unfolded; keep it focusable rather than measuring the unfolded state.
      if (document.activeElement !== el) setCut(el.scrollWidth > el.clientWidth);
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, [props.text]);
  const full = props.full ?? props.text;
  return (
    <span ref={ref} className={`truncate${props.className ? ` ${props.className}` : ''}`} title={cut || full !== props.text ? full : undefined} tabIndex={cut ? 0 : undefined}>
      {props.text}
    </span>
  );
}
