/**
 * How each topic is drawn in the depth chart, its legend and the topic list's swatches: a colour and a dash
 * pattern. Twelve mid-tone colours that read on the light and the dark background alike, first solid, then
 * dashed, then dotted: 36 distinct styles before any repeats.
 */
export const SERIES_COLOURS = ['#3b82f6', '#f97316', '#22a06b', '#d946ef', '#ca8a04', '#0891b2', '#ef4444', '#8b5cf6', '#65a30d', '#db2777', '#78716c', '#0d9488'];
/** Canvas line dashes (px on, px off); [] is solid. */
export const SERIES_DASHES: ReadonlyArray<readonly number[]> = [[], [8, 4], [2, 3]];

export interface SeriesStyle {
  colour: string;
  dash: readonly number[];
}

/** FNV-1a: a small, stable hash of the name, the same in every browser and on every load. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * A style per topic. Each topic's colour comes from a hash of its name, not from its place in the list, so it
 * keeps its colour across reloads and when other topics come and go; of two topics whose names hash alike the
 * second (in name order) takes the next free colour, and only once all twelve solid colours are taken does a
 * topic get a dashed (then dotted) line.
 */
export function seriesStyles(topics: readonly string[]): Map<string, SeriesStyle> {
  const taken = new Set<number>();
  const out = new Map<string, SeriesStyle>();
  const slots = SERIES_COLOURS.length * SERIES_DASHES.length;
  for (const topic of [...topics].sort()) {
    const preferred = hash(topic) % SERIES_COLOURS.length;
    let slot = -1;
    for (let i = 0; i < slots && slot < 0; i++) {
      const dash = Math.floor(i / SERIES_COLOURS.length);
      const candidate = dash * SERIES_COLOURS.length + ((preferred + i) % SERIES_COLOURS.length);
      if (!taken.has(candidate)) slot = candidate;
    }
    // More topics than styles: repeat, still by the name's hash.
    if (slot < 0) slot = hash(topic) % slots;
    taken.add(slot);
    out.set(topic, { colour: SERIES_COLOURS[slot % SERIES_COLOURS.length], dash: SERIES_DASHES[Math.floor(slot / SERIES_COLOURS.length)] });
  }
  return out;
}
