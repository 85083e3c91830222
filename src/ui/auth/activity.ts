/**
 * When the user last touched the page (pointer, keyboard, wheel). A session is refreshed quietly only for
 * someone who is there; an idle tab gets a warning instead, so a forgotten tab does not stay signed in forever.
 */
let lastActivity = 0;
let listening = false;

export function trackActivity(): void {
  if (listening) return;
  listening = true;
  const mark = () => {
    lastActivity = Date.now();
  };
  for (const type of ['pointerdown', 'pointermove', 'keydown', 'wheel', 'touchstart']) {
    window.addEventListener(type, mark, { capture: true, passive: true });
  }
}

/** Milliseconds since the last interaction; Infinity when there was none since the page loaded. */
export function idleFor(): number {
  return lastActivity === 0 ? Infinity : Date.now() - lastActivity;
}
