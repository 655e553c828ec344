import type { ICredentialType, INodeProperties } from 'n8n-workflow';

/**
 * The PostgreSQL database where the Poll Trigger keeps its dedupe history instead of the workflow's
 * static data (core/poll/historyStore.ts; the table is nodes/shared/historyTable.ts's
 * `n8n_durable_triggers_history`). Its own type, so that picking the history's database is a choice
 * of its own, apart from the `postgres` credentials the SQL source uses; its fields are n8n's
 * Postgres credential's (host, database, user, password, SSL, port, SSH tunnel), which the SQL
 * sessions already read (nodes/shared/sqlSession.ts).
 *
 * `extends = ['postgres']` with no properties of its own relies on n8n resolving a parent type by
 * name across every loaded package (checked in n8n 2.41.1 and 1.123.81):
 * - the server loads the parent from n8n-nodes-base: LoadNodesAndCredentials.getCredential (n8n's
 *   dist/load-nodes-and-credentials.js) looks the name up in every loader, and
 *   CredentialsHelper.getCredentialsProperties (dist/credentials-helper.js) merges each parent's
 *   properties (recursively) before the type's own with NodeHelpers.mergeNodeProperties: that list
 *   is what the stored data is checked and its expressions resolved against;
 * - CredentialTypes.getParentTypes (dist/credential-types.js) walks `extends` from the known
 *   credentials of all packages (n8n-core's DirectoryLoader.loadCredentialFromFile records
 *   `extends` for a package's credential);
 * - the editor merges the same way from the types it has fetched (its credential form,
 *   useCredentialForm: the parent's properties, then the type's own).
 *
 * The Poll Trigger tests it with `pollHistoryPostgresTest` (nodes/shared/historyTable.ts: connect,
 * SELECT 1, create the table unless it exists, check the rights), named by `testedBy` in
 * PollTriggerDescription.ts's historyStoreCredential. The lint rule that asks for a test looks for
 * `testedBy` only in a node file's literal credentials list, which the Poll Trigger cannot have (n8n's
 * node linter fails on a spread list, and the list is shared with the Connector): switched off here.
 */
// eslint-disable-next-line @n8n/community-nodes/credential-test-required
export class PollHistoryPostgres implements ICredentialType {
	name = 'pollHistoryPostgres';

	displayName = 'Poll History (PostgreSQL)';

	extends = ['postgres'];

	icon = {
		light: 'file:pollHistoryPostgres.svg',
		dark: 'file:pollHistoryPostgres.dark.svg',
	} as const;

	documentationUrl =
		'https://github.com/n8n-nodes-durable-triggers/n8n-nodes-durable-triggers/blob/main/docs/poll-trigger.md#history-store';

	properties: INodeProperties[] = [];
}
