import { useReachable } from '../api/connectivity';

export function UnreachableBanner() {
  const reachable = useReachable();
  if (reachable) return null;
  return (
    <div className="banner banner-error" role="alert">
      The service cannot be reached. The data shown may be out of date; retrying in the background.
    </div>
  );
}
