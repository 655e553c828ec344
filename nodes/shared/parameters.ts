import type { INodeCredentialDescription, INodeProperties, INodePropertyOptions } from 'n8n-workflow';

import { allOps } from '../../core/connectors/registry';
import type { TimeUnit } from '../../core/units';

const UNIT_NAMES: Record<TimeUnit, string> = { seconds: 'Seconds', minutes: 'Minutes', hours: 'Hours', days: 'Days' };

/** The options of a duration-unit parameter, in the order given. */
export function timeUnitOptions(...units: TimeUnit[]): INodePropertyOptions[] {
	return units.map((unit) => ({ name: UNIT_NAMES[unit], value: unit }));
}

const IMAP_OPS = allOps()
	.filter((op) => op.transport === 'imap')
	.map((op) => op.name);

/**
 * The credentials a connector op may need; each shown only for the ops that use it.
 *
 * The HTTP one is keyed with `hide`, not `show`: when `show` conditions of a node's credentials cover
 * every value of an options parameter, n8n's editor takes that parameter for the node's "authentication"
 * field, removes it from the parameter list and offers it only as the credential's type (getMainAuthField),
 * so the Op dropdown vanished from the panel (caught by test/e2e/editor.test.ts).
 */
export const connectorCredentials: INodeCredentialDescription[] = [
	{ name: 'durableHttpApi', required: false, displayOptions: { hide: { op: IMAP_OPS } } },
	{ name: 'durableImapApi', required: true, testedBy: 'imapCredentialTest', displayOptions: { show: { op: IMAP_OPS } } },
];

/** `op` and `with`, the same in the Poll Trigger and the Connector node. */
export function connectorProperties(withDescription: string): INodeProperties[] {
	return [
		{
			displayName: 'Op',
			name: 'op',
			type: 'options',
			noDataExpression: true,
			default: 'http.request',
			options: allOps().map((op) => ({ name: op.name, value: op.name, description: op.description })),
			description: 'The connector operation to call',
		},
		{
			displayName: 'With',
			name: 'with',
			type: 'json',
			default: '{\n  "method": "GET",\n  "url": "/items"\n}',
			description: withDescription,
		},
	];
}
