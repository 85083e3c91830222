// Fault injection rules: answer matching requests with a Status error, or never answer them.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { statusForCode, type Status } from './errors.js';

export interface RequestMatch {
  /** HTTP method, case-insensitive (GET, POST, PUT, PATCH, DELETE). Any method when absent. */
  method?: string;
  /** Tested against the path (`/apis/g/v/...`) and against the path with its query string; either may match. */
  pathPattern?: RegExp;
  /** How many requests the rule applies to; unlimited when absent. */
  count?: number;
}

export interface FailRule extends RequestMatch {
  /** HTTP status to answer with (the Status object carries it as `code`). */
  status: number;
  /** Status `reason`; defaults to the usual one for the code (e.g. 500 InternalError, 429 TooManyRequests). */
  reason?: string;
  /** Status `message`; defaults to apimachinery's generic text for the code. */
  message?: string;
}

interface Entry<R extends RequestMatch> {
  rule: R;
  remaining: number;
}

interface HangEntry extends Entry<RequestMatch> {
  held: Set<ServerResponse>;
  removed: boolean;
}

function matches(rule: RequestMatch, method: string, path: string, url: string): boolean {
  if (rule.method && rule.method.toUpperCase() !== method.toUpperCase()) return false;
  if (rule.pathPattern) {
    rule.pathPattern.lastIndex = 0;
    const a = rule.pathPattern.test(path);
    rule.pathPattern.lastIndex = 0;
    if (!a && !rule.pathPattern.test(url)) return false;
  }
  return true;
}

export class Faults {
  private readonly failRules: Array<Entry<FailRule>> = [];
  private readonly streamFailRules: Array<Entry<FailRule>> = [];
  private readonly hangRules: HangEntry[] = [];

  addFail(rule: FailRule): () => void {
    return Faults.add(this.failRules, rule);
  }

  /**
   * Requests matching a hang rule get no answer while the rule is in place. Removing the rule destroys
   * the sockets of the requests it held, so their callers see a connection error (e.g. "socket hang up").
   */
  addHang(rule: RequestMatch): () => void {
    const e: HangEntry = { rule, remaining: rule.count ?? Infinity, held: new Set(), removed: false };
    this.hangRules.push(e);
    return () => {
      if (e.removed) return;
      e.removed = true;
      const i = this.hangRules.indexOf(e);
      if (i >= 0) this.hangRules.splice(i, 1);
      for (const res of e.held) res.socket?.destroy();
      e.held.clear();
    };
  }

  /**
   * Watch requests matching the rule are accepted (HTTP 200) and then get one ERROR event carrying the
   * Status, and the stream ends: how kube-apiserver reports a failure inside a watch (an etcd error, say).
   */
  addStreamFail(rule: FailRule): () => void {
    return Faults.add(this.streamFailRules, rule);
  }

  /** Adds a fail rule to `rules`; returns its remover. */
  private static add(rules: Array<Entry<FailRule>>, rule: FailRule): () => void {
    const e = { rule, remaining: rule.count ?? Infinity };
    rules.push(e);
    return () => {
      const i = rules.indexOf(e);
      if (i >= 0) rules.splice(i, 1);
    };
  }

  /** A Status to answer with when a fail rule matches (consumes one of its count). */
  failure(method: string, path: string, url: string): Status | undefined {
    return Faults.take(this.failRules, method, path, url);
  }

  /** The Status a watch stream is to fail with at once, when a stream fail rule matches. */
  streamFailure(method: string, path: string, url: string): Status | undefined {
    return Faults.take(this.streamFailRules, method, path, url);
  }

  private static take(rules: Array<Entry<FailRule>>, method: string, path: string, url: string): Status | undefined {
    for (const e of rules) {
      if (e.remaining <= 0 || !matches(e.rule, method, path, url)) continue;
      e.remaining--;
      if (e.remaining <= 0) rules.splice(rules.indexOf(e), 1);
      return statusForCode(e.rule.status, e.rule.reason, e.rule.message);
    }
    return undefined;
  }

  /** True when the request was taken by a hang rule (it must not be answered). */
  hang(req: IncomingMessage, res: ServerResponse, method: string, path: string, url: string): boolean {
    for (const e of this.hangRules) {
      if (e.remaining <= 0 || !matches(e.rule, method, path, url)) continue;
      e.remaining--;
      e.held.add(res);
      res.on('close', () => e.held.delete(res));
      req.resume();
      return true;
    }
    return false;
  }

  /** Release every held request (server shutdown). */
  clear(): void {
    for (const e of [...this.hangRules]) {
      for (const res of e.held) res.socket?.destroy();
      e.held.clear();
    }
    this.hangRules.length = 0;
    this.failRules.length = 0;
    this.streamFailRules.length = 0;
  }
}
