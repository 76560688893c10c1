/** The compatibility app on BullMQ: only the connection is BullMQ's (Redis). */
import { app } from './app.js';

export const done = app({ host: 'localhost', port: 6379 });
