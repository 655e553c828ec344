/** Pure core of the Durable Schedule Trigger: no n8n imports; the node translates parameters and fires. */
export * from './catchUp';
export * from './cron';
export * from './engine';
export * from './fire';
export * from './history';
export * from './interval';
export * from './overlap';
export * from './schedule';
