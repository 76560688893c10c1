/** The compatibility app on zkq: only the connection is zkq's (ZooKeeper). */
import { app } from './app.js';

export const done = app({ connectionString: '127.0.0.1:2181' });
