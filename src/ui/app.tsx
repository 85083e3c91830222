import { useEffect, useState, type ReactElement } from 'react';
import { SessionKeeper } from './auth/session-keeper';
import { useIsAdmin, useSession } from './auth/session';
import { SignInDialog } from './auth/sign-in-dialog';
import { useAuthStatus } from './auth/status';
import { UserMenu } from './auth/user-menu';
import { NARROW, useMediaQuery } from './components/use-media-query';
import { href, useRoute, type ScreenId } from './router';
import { ConsumeScreen } from './screens/consume';
import { EnqueueScreen } from './screens/enqueue';
import { GroupsScreen } from './screens/groups';
import { MaintenanceScreen } from './screens/maintenance';
import { MessagesScreen } from './screens/messages';
import { OverviewScreen } from './screens/overview';
import { ReplayScreen } from './screens/replay';
import { TopicsScreen } from './screens/topics';
import { UsersScreen } from './screens/users';
import { Footer } from './shell/footer';
import { SkipLink } from './shell/skip-link';
import { UnreachableBanner } from './shell/unreachable-banner';

interface ScreenEntry {
  label: string;
  render: () => ReactElement;
  adminOnly?: boolean;
}

/** The navigation, in order; admin-only screens are hidden from everyone else. */
const SCREENS: Record<ScreenId, ScreenEntry> = {
  overview: { label: 'Overview', render: () => <OverviewScreen /> },
  messages: { label: 'Messages', render: () => <MessagesScreen /> },
  enqueue: { label: 'Enqueue', render: () => <EnqueueScreen /> },
  consume: { label: 'Consume', render: () => <ConsumeScreen /> },
  topics: { label: 'Topics', render: () => <TopicsScreen /> },
  groups: { label: 'Consumer groups', render: () => <GroupsScreen /> },
  replay: { label: 'Replay', render: () => <ReplayScreen /> },
  users: { label: 'Users', render: () => <UsersScreen />, adminOnly: true },
  maintenance: { label: 'Maintenance', render: () => <MaintenanceScreen />, adminOnly: true },
};

export function App() {
  const { screen } = useRoute();
  const isAdmin = useIsAdmin();
  const { authRequired, user, loginPrompt } = useSession();
  useAuthStatus();
  const entry = SCREENS[screen];
  useEffect(() => {
    document.title = `${entry.label} · Conveyor`;
  }, [entry.label]);
  return (
    <div className="shell">
      <SkipLink />
      <header className="topbar">
        <a className="brand" href={href('overview')}>
          Conveyor
        </a>
        <UserMenu />
      </header>
      <UnreachableBanner />
      <MainNav screen={screen} isAdmin={isAdmin} />
      <main className="content" id="main" tabIndex={-1}>
        {/* Keyed by user: another user signing in on this tab gets fresh screens, not the last one's dequeued payloads. */}
        <ScreenOrGate key={user?.id ?? ''} entry={entry} ready={authRequired === false || user !== null} pending={authRequired === null} isAdmin={isAdmin} />
      </main>
      <Footer />
      {loginPrompt && <SignInDialog />}
      <SessionKeeper />
    </div>
  );
}

/**
 * The screens' links: a column beside the content, or on a phone one "Menu" button that opens them (nine
 * links wrapped over three rows would push every screen down). The menu closes when a screen is chosen.
 */
function MainNav(props: { screen: ScreenId; isAdmin: boolean }) {
  const narrow = useMediaQuery(NARROW);
  const [open, setOpen] = useState(false);
  useEffect(() => setOpen(false), [props.screen]);
  const entries = (Object.entries(SCREENS) as Array<[ScreenId, ScreenEntry]>).filter(([, e]) => !e.adminOnly || props.isAdmin);
  return (
    <nav className={`nav${narrow ? ' nav-compact' : ''}`} aria-label="Main">
      {narrow && (
        <button type="button" className="menu-toggle" aria-expanded={open} aria-controls="main-nav-list" onClick={() => setOpen((o) => !o)}>
          <span aria-hidden="true">☰</span> Menu<span className="muted">: {SCREENS[props.screen].label}</span>
        </button>
      )}
      <ul id="main-nav-list" hidden={narrow && !open}>
        {entries.map(([id, e]) => (
          <li key={id}>
            <a href={href(id)} aria-current={id === props.screen ? 'page' : undefined} onClick={() => setOpen(false)}>
              {e.label}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}

/**
 * A screen renders once the tab may use the API: auth off, or a user signed in. After a 401 the user stays
 * set, so the screen (its state, its filters) stays mounted under the sign-in dialog.
 */
function ScreenOrGate(props: { entry: ScreenEntry; ready: boolean; pending: boolean; isAdmin: boolean }) {
  if (props.pending) return <p className="muted">Loading…</p>;
  if (!props.ready)
    return (
      <>
        <h1>{props.entry.label}</h1>
        <p>Sign in to use Conveyor.</p>
      </>
    );
  if (props.entry.adminOnly && !props.isAdmin)
    return (
      <>
        <h1>{props.entry.label}</h1>
        <p className="error" role="alert">
          Permission denied: the {props.entry.label} screen is for administrators only.
        </p>
      </>
    );
  return props.entry.render();
}
