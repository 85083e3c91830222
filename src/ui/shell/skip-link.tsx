/**
 * "Skip to main content". Not a plain `href="#main"`: the fragment holds the route (router.ts), so following
 * it would leave the current screen; focus moves to <main> instead.
 */
export function SkipLink() {
  return (
    <a
      className="skip-link"
      href="#main"
      onClick={(event) => {
        event.preventDefault();
        document.getElementById('main')?.focus();
      }}
    >
      Skip to main content
    </a>
  );
}
