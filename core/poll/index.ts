/** The Poll Trigger's pure core: expressions, dedupe, the start protocol and the runner. No n8n imports. */
export * from './errors';
export * from './expressions';
export * from './dedupe';
export * from './start';
export * from './runner';
