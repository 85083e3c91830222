import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { DepthHistory } from './depth-history';
import { seriesStyles, type SeriesStyle } from './series-style';
const HEIGHT = 220;
const timeOfDay = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

/** A series with one sample has no line to draw: its point is drawn instead, from the first sample on. */
const lonePoint = (u: uPlot, seriesIdx: number): boolean => {
  let samples = 0;
  for (const v of u.data[seriesIdx] as ArrayLike<number | null | undefined> & Iterable<number | null | undefined>) if (v !== null && v !== undefined) samples++;
  return samples < 2;
};

/** The newest sample on the right edge, at least the last minute shown; before any sample, the minute up to now. */
function timeRange(times: ArrayLike<number>): uPlot.Range.MinMax {
  const last = times.length > 0 ? times[times.length - 1] : Date.now() / 1000;
  const first = times.length > 0 ? times[0] : last;
  return [Math.min(first, last - 60), last];
}

function options(topics: string[], width: number, styles: Map<string, SeriesStyle>, onTicks: (labels: string[]) => void): uPlot.Options {
  const text = cssVar('--muted');
  const grid = cssVar('--border');
  const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
  return {
    width,
    height: HEIGHT,
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    // At least the last minute, the newest point on the right edge: a fresh chart gets readable ticks, not milliseconds.
    scales: {
      // From the data itself: with a single sample uPlot hands the range function no usable min and max (its
      // ticks all read 00:00:00), and the first sample is the one that should show at once.
      x: { time: true, range: (u) => timeRange(u.data[0] as ArrayLike<number>) },
      y: { range: (_u, _min, max) => [0, Math.max(5, Math.ceil(max * 1.1))] },
    },
    axes: [
      {
        ...axis,
        space: 80,
        values: (_u, splits) => {
          const labels = splits.map((s) => timeOfDay.format(new Date(s * 1000)));
          onTicks(labels);
          return labels;
        },
      },
      { ...axis, size: 50 },
    ],
    series: [
      {},
      ...topics.map((topic) => {
        const style = styles.get(topic)!;
        return { label: topic, stroke: style.colour, dash: [...style.dash], width: 2, points: { show: lonePoint, size: 7, fill: style.colour } };
      }),
    ],
  };
}

/**
 * The depth chart (uPlot on a canvas). New points are handed to the existing plot; it is rebuilt only when a
 * topic appears, the width changes or the colour scheme flips (its colours come from the CSS variables).
 */
export function DepthChart(props: { history: DepthHistory; label: string }) {
  const container = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const { history } = props;
  const topicsKey = history.topics.join('\n');
  const data = [history.times, ...history.series] as uPlot.AlignedData;
  const dataRef = useRef(data);
  dataRef.current = data;

  useEffect(() => {
    const el = container.current!;
    const topics = topicsKey === '' ? [] : topicsKey.split('\n');
    const build = () => {
      plot.current?.destroy();
      // The axis is drawn on the canvas: its labels are also kept on the element, where a test can read them.
      plot.current = new uPlot(options(topics, Math.max(200, el.clientWidth), seriesStyles(topics), (labels) => (el.dataset.xTicks = labels.join(' | '))), dataRef.current, el);
    };
    build();
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(200, el.clientWidth), height: HEIGHT }));
    resize.observe(el);
    const scheme = window.matchMedia('(prefers-color-scheme: dark)');
    scheme.addEventListener('change', build);
    return () => {
      resize.disconnect();
      scheme.removeEventListener('change', build);
      plot.current?.destroy();
      plot.current = null;
    };
  }, [topicsKey]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  return <div ref={container} className="depth-chart" role="img" aria-label={props.label} data-points={history.times.length} />;
}
