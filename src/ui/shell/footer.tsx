import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';

/**
 * The service's version. Asked every 10 s: /api/version needs no token and no database, so it doubles as the
 * heartbeat that clears the "cannot be reached" banner once the service answers again.
 */
export function Footer() {
  const version = useQuery({
    queryKey: ['version'],
    queryFn: () => unwrap(api.GET('/api/version')) as Promise<{ version: string }>,
    refetchInterval: 10_000,
    refetchIntervalInBackground: true,
    retry: false,
  });
  return (
    <footer className="footer">
      <span>Conveyor</span>
      {version.data && <span> · version {version.data.version}</span>}
    </footer>
  );
}
