/**
 * What stands between the dashboard and every other web page the operator
 * visits. Binding to loopback is no defence on its own: a page on any site
 * can make the browser send a cross-site "simple" request (a form POST, a
 * `text/plain` fetch) to 127.0.0.1, and a DNS-rebinding page reaches it
 * under its own host name. So every request is checked, in this order:
 *
 * 1. `Host` must name the dashboard (loopback names, plus those configured):
 *    a rebound name is refused before anything is read (421).
 * 2. Credentials, when the board has them (HTTP Basic or a bearer token),
 *    compared in constant time (401).
 * 3. A write (any method but GET, HEAD, OPTIONS) must come from the board's
 *    own origin: an `Origin` header, when the client sends one (browsers do
 *    on every cross-site write), must be the `Host`'s; `Sec-Fetch-Site`,
 *    when sent, must be `same-origin` or `none` (403). A body must be JSON,
 *    which a cross-site form cannot send without a CORS preflight the board
 *    never grants (415).
 * 4. A read-only board refuses every write (403), whatever its page shows.
 *
 * Refusals are JSON: `{ "error": "<code>", "message": "..." }`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';

/** Host names a dashboard answers to unless told more. */
export const LOOPBACK_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '[::1]', '::1'];

/** HTTP Basic (`user`, `password`) or a bearer token. */
export type DashboardAuth = { kind: 'basic'; user: string; password: string } | { kind: 'bearer'; token: string };

export interface DashboardGuardOptions {
  /** Host names (no port) the board answers to, beside the loopback names; `*` accepts any. */
  allowedHosts?: readonly string[];
  /** Credentials every request must carry. */
  auth?: DashboardAuth;
  /** Refuse every write. */
  readOnly?: boolean;
}

/** What a refused request is told, and with which status. */
export interface GuardRefusal {
  status: 400 | 401 | 403 | 415 | 421;
  error: 'bad_host' | 'unauthorized' | 'cross_origin' | 'not_json' | 'read_only';
  message: string;
}

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The host name of a `Host` header value, lower case, without its port (`[::1]:3000` → `[::1]`). */
export function hostName(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end < 0 ? h : h.slice(0, end + 1);
  }
  const colon = h.indexOf(':');
  return colon < 0 ? h : h.slice(0, colon);
}

/** Parses `basic:user:password` or `bearer:token`; undefined for anything else. */
export function parseDashboardAuth(spec: string): DashboardAuth | undefined {
  const colon = spec.indexOf(':');
  if (colon < 0) return undefined;
  const kind = spec.slice(0, colon).toLowerCase();
  const rest = spec.slice(colon + 1);
  if (kind === 'bearer') return rest.length > 0 ? { kind: 'bearer', token: rest } : undefined;
  if (kind === 'basic') {
    const sep = rest.indexOf(':');
    if (sep <= 0 || sep === rest.length - 1) return undefined;
    return { kind: 'basic', user: rest.slice(0, sep), password: rest.slice(sep + 1) };
  }
  return undefined;
}

/** Compares digests, so that neither the secret's length nor its bytes show in the time taken. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

function authorized(header: string | undefined, auth: DashboardAuth): boolean {
  if (!header) return false;
  const space = header.indexOf(' ');
  if (space < 0) return false;
  const scheme = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if (auth.kind === 'bearer') return scheme === 'bearer' && sameSecret(value, auth.token);
  if (scheme !== 'basic') return false;
  return sameSecret(Buffer.from(value, 'base64').toString('utf8'), `${auth.user}:${auth.password}`);
}

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function isJson(req: IncomingMessage): boolean {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

/** Why a request must be refused, or undefined when it may go on. */
export function checkRequest(req: IncomingMessage, opts: DashboardGuardOptions = {}): GuardRefusal | undefined {
  const host = req.headers.host;
  if (!host) return { status: 400, error: 'bad_host', message: 'a Host header is required' };
  const allowed = [...LOOPBACK_HOSTS, ...(opts.allowedHosts ?? []).map((h) => h.toLowerCase())];
  if (!allowed.includes('*') && !allowed.includes(hostName(host))) {
    return {
      status: 421,
      error: 'bad_host',
      message: `this dashboard does not answer to host ${hostName(host)} (add it with --allowed-host)`,
    };
  }
  if (opts.auth && !authorized(req.headers.authorization, opts.auth)) {
    return { status: 401, error: 'unauthorized', message: 'credentials required' };
  }
  if (READ_METHODS.has((req.method ?? 'GET').toUpperCase())) return undefined;
  const origin = req.headers.origin;
  if (origin !== undefined) {
    let originHost: string | undefined;
    try {
      originHost = new URL(origin).host.toLowerCase();
    } catch {
      originHost = undefined;
    }
    if (originHost !== host.trim().toLowerCase()) {
      return { status: 403, error: 'cross_origin', message: 'writes are accepted from the dashboard itself only' };
    }
  }
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    return { status: 403, error: 'cross_origin', message: 'writes are accepted from the dashboard itself only' };
  }
  if (hasBody(req) && !isJson(req)) {
    return { status: 415, error: 'not_json', message: 'a request body must be application/json' };
  }
  if (opts.readOnly) return { status: 403, error: 'read_only', message: 'this dashboard is read-only' };
  return undefined;
}

/** Express middleware applying checkRequest to every request. */
export function dashboardGuard(opts: DashboardGuardOptions = {}) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const refusal = checkRequest(req, opts);
    if (!refusal) {
      next();
      return;
    }
    if (refusal.status === 401 && opts.auth?.kind === 'basic') res.set('WWW-Authenticate', 'Basic realm="zkq"');
    if (refusal.status === 401 && opts.auth?.kind === 'bearer') res.set('WWW-Authenticate', 'Bearer');
    res.status(refusal.status).json({ error: refusal.error, message: refusal.message });
  };
}
