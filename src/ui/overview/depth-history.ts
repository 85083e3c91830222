import { useEffect, useRef, useState } from 'react';

/** Depth per topic over time, as uPlot wants it: one x array (seconds) and one y array per topic. */
export interface DepthHistory {
  times: number[];
  topics: string[];
  series: Array<Array<number | null>>;
}

const MAX_POINTS = 120;

/**
 * Appends one point each time the stats are fetched again (`at` changes). Kept in the screen: the chart
 * shows what happened while it was open, and a topic that appears later starts with gaps, not zeros.
 */
export function useDepthHistory(at: number, depths: Map<string, number> | undefined): DepthHistory {
  const history = useRef<DepthHistory>({ times: [], topics: [], series: [] });
  const [snapshot, setSnapshot] = useState<DepthHistory>(history.current);
  useEffect(() => {
    if (!depths || at === 0) return;
    const h = history.current;
    if (h.times.length > 0 && h.times[h.times.length - 1] >= at / 1000) return;
    for (const topic of [...depths.keys()].sort()) {
      if (!h.topics.includes(topic)) {
        h.topics.push(topic);
        h.series.push(h.times.map(() => null));
      }
    }
    h.times.push(at / 1000);
    h.topics.forEach((topic, i) => h.series[i].push(depths.get(topic) ?? 0));
    if (h.times.length > MAX_POINTS) {
      h.times.shift();
      for (const s of h.series) s.shift();
    }
    setSnapshot({ times: [...h.times], topics: [...h.topics], series: h.series.map((s) => [...s]) });
  }, [at, depths]);
  return snapshot;
}
