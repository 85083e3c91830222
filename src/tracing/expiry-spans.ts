import type { AttemptsObserver } from '../queue/attempts-observer.js';
import type { AttemptResult } from '../store/messages/settle.js';
import { traceExpiry } from './message-spans.js';
import type { Tracing } from './tracing.js';

/** The domain's attempts observer with tracing on: an `expire` span per message released after its visibility timeout. */
export class ExpirySpans implements AttemptsObserver {
  constructor(private readonly tracing: Tracing) {}

  expired(result: AttemptResult): void {
    traceExpiry(this.tracing, result);
  }
}
