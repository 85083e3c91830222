import type { Logger } from '../log/logger.js';

/** SIGTERM and SIGINT, caught from before a long-running command has anything to close. */
export interface SignalTrap {
  /** A signal has arrived: start-up should stop at its next safe point rather than go on. */
  readonly requested: boolean;
  /** Aborted by that signal: what start-up waits on and can give up safely (another pod's migrations) ends. */
  readonly stopping: AbortSignal;
  /**
   * What closes the command: run at once when a signal came during start-up (then the process exits with the
   * line "conveyor stopped during start-up"), else at the first signal. Exits 0 after closing, 1 when closing failed.
   */
  closeWith(close: () => Promise<void>): void;
}

/**
 * Installs the handlers now, before start-up: a pod is also stopped while it starts (a rolling update, a
 * scale-down), and without a handler that signal kills the process mid-migration, with the pool and the
 * migrations lease still held. Such a signal is remembered and acted on once start-up hands over what to close.
 * Later signals are ignored: the first one's shutdown has a deadline of its own (server.shutdown_timeout).
 */
export function trapSignals(logger: Logger): SignalTrap {
  let received: string | undefined;
  let close: (() => Promise<void>) | undefined;
  const stopping = new AbortController();
  const stop = (duringStartup: boolean) => {
    close!().then(
      () => {
        if (duringStartup) logger.info({ signal: received }, 'conveyor stopped during start-up');
        process.exit(0);
      },
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: string) => {
    if (received) return;
    received = signal;
    if (close) {
      logger.info({ signal }, 'shutting down');
      return stop(false);
    }
    // Stopping here could cut a migration short (MySQL commits each DDL statement): start-up decides when.
    logger.info({ signal, duringStartup: true }, 'shutting down once start-up reaches a safe point');
    stopping.abort(new Error(`${signal} during start-up`));
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  return {
    get requested() {
      return received !== undefined;
    },
    stopping: stopping.signal,
    closeWith(closeFn) {
      close = closeFn;
      if (received) stop(true);
    },
  };
}

/** Runs until SIGTERM or SIGINT, then closes gracefully and exits 0 (1 when closing failed). */
export function exitOnSignal(logger: Logger, close: () => Promise<void>): void {
  trapSignals(logger).closeWith(close);
}
