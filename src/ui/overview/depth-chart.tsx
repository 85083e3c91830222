import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { DepthHistory } from './depth-history';

/** Mid-tone colours that read on the light and the dark background alike. */
export const SERIES_COLOURS = ['#3b82f6', '#f97316', '#22a06b', '#d946ef', '#eab308', '#14b8a6', '#ef4444', '#8b5cf6'];
const HEIGHT = 220;
const timeOfDay = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

function options(topics: string[], width: number): uPlot.Options {
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
      x: { time: true, range: (_u, min, max) => [Math.min(min, max - 60), max] },
      y: { range: (_u, _min, max) => [0, Math.max(5, Math.ceil(max * 1.1))] },
    },
    axes: [{ ...axis, space: 80, values: (_u, splits) => splits.map((s) => timeOfDay.format(new Date(s * 1000))) }, { ...axis, size: 50 }],
    series: [{}, ...topics.map((topic, i) => ({ label: topic, stroke: SERIES_COLOURS[i % SERIES_COLOURS.length], width: 2, points: { show: false } }))],
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
      plot.current = new uPlot(options(topics, Math.max(200, el.clientWidth)), dataRef.current, el);
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
