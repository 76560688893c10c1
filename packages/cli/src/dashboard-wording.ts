/**
 * bull-board's words for a ZooKeeper store. bull-board takes no custom text:
 * `uiConfig.locale` only picks one of its bundled languages, and its server
 * panel is titled "Redis details" unless the stats say `backend: 'postgres'`
 * (the only other store it names). Its page loads every message from
 * `<base>static/locales/<lng>/messages.json`, so the board's router answers
 * that path before bull-board's static files do, with bull-board's own file
 * where Redis is named replaced by ZooKeeper (and, in English, the panel's
 * rows named for what they show). Nothing of bull-board is copied or changed;
 * a bull-board that loads its messages from elsewhere shows its own words again.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import express, { type Router } from 'express';

/** English messages, by key, where a word-for-word replacement would say something untrue of ZooKeeper. */
export const ENGLISH_WORDING: Readonly<Record<string, string>> = {
  'REDIS.TITLE': 'ZooKeeper details',
  'REDIS.OS': 'Server',
  'REDIS.BLOCKED_CLIENTS': 'Outstanding requests',
  'QUEUE.ACTIONS.CONFIRM.OBLITERATE_QUEUE':
    'Are you sure you want to obliterate this queue?\n\nThis will completely remove the queue and all its znodes.\nThe queue must be paused first.',
  'QUEUE.ACTIONS.TOAST.RETRY_SKIPPED': 'Skipped {{count}} ids with no job data behind them.',
  'QUEUE.WORKERS.EMPTY_HINT': 'Check that a worker process is running and pointed at the same ZooKeeper namespace.',
  'ERRORS.REDIS_STATS_UNAVAILABLE':
    'ZooKeeper details are not available: the server must allow the four-letter words mntr and srvr',
};

/** bull-board UI's directory (the `uiBasePath` the board is given, so both read the same files). */
export function bullBoardUiPath(): string {
  return dirname(createRequire(import.meta.url).resolve('@bull-board/ui/package.json'));
}

type Messages = { [key: string]: string | Messages };

/** bull-board's messages for `lng` in ZooKeeper's words: Redis -> ZooKeeper, and ENGLISH_WORDING for `en-*`. */
export function zooKeeperWording(messages: Messages, lng: string): Messages {
  const english = lng.startsWith('en');
  const visit = (node: Messages, prefix: string): Messages =>
    Object.fromEntries(
      Object.entries(node).map(([key, value]) => {
        const path = prefix ? `${prefix}.${key}` : key;
        if (typeof value !== 'string') return [key, visit(value, path)];
        const own = english ? ENGLISH_WORDING[path] : undefined;
        return [key, own ?? value.replace(/\bRedis\b/g, 'ZooKeeper')];
      }),
    );
  return visit(messages, '');
}

/** Answers `static/locales/<lng>/messages.json` for each language bull-board ships, in ZooKeeper's words. */
export function wordingRouter(uiPath: string): Router {
  const dir = join(uiPath, 'dist', 'static', 'locales');
  const languages = new Set(readdirSync(dir));
  const cache = new Map<string, string>();
  const router = express.Router();
  router.get('/static/locales/:lng/messages.json', (req, res, next) => {
    const { lng } = req.params;
    if (!languages.has(lng)) return next();
    let body = cache.get(lng);
    if (body === undefined) {
      try {
        const messages = JSON.parse(readFileSync(join(dir, lng, 'messages.json'), 'utf8')) as Messages;
        body = JSON.stringify(zooKeeperWording(messages, lng));
      } catch (err) {
        return next(err);
      }
      cache.set(lng, body);
    }
    res.type('application/json').send(body);
  });
  return router;
}
