/** The Poll Trigger's pure core: expressions, dedupe kinds, the commit protocol and the runner. No n8n imports. */
export * from './errors';
export * from './expressions';
export * from './dedupe';
export * from './kinds';
export * from './start';
export * from './runner';
export * from './ledger';
export * from './runStage';
export * from './history';
export * from './historyStore';
export * from './paging';
export * from './retries';
export * from './silence';
export * from './activation';
