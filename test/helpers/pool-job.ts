/** A job as a ThreadPool runs it: a fresh one, in its first attempt. */
import type { JobJson } from '@zkq/core';

export function poolJob(id: string, data: unknown, name = 'j'): JobJson {
  return {
    id,
    name,
    data,
    opts: {},
    progress: 0,
    attemptsMade: 0,
    attemptsStarted: 1,
    stalledCounter: 0,
    timestamp: Date.now(),
    delay: 0,
    priority: 0,
    stacktrace: [],
  };
}
