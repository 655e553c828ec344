import type { INodeCredentialDescription, INodeProperties } from 'n8n-workflow';

import { ARMED_RUNS_MAX } from '../../core/poll';
import { HISTORY_TABLE } from '../shared/historyTable';
import { paginationProperties } from '../shared/pagination';
import { connectorCredentials, connectorProperties, timeUnitOptions } from '../shared/parameters';
import { whenRunFailsProperties } from '../shared/whenRunFails';

/** The dedupe kinds that remember one record per key (core/poll/kinds.ts KeyedStore). */
export const KEYED_KINDS = ['unique', 'time_window', 'changed'];

/** The history table's credential: n8n's Postgres credential's fields, for the History Store. */
export const historyStoreCredential: INodeCredentialDescription = {
	name: 'pollHistoryPostgres',
	required: true,
	testedBy: 'pollHistoryPostgresTest',
	displayOptions: { show: { historyStore: ['postgres'], dedupe: KEYED_KINDS } },
};

/** The op's credentials (as the Connector node's) and the history table's. */
export const pollTriggerCredentials: INodeCredentialDescription[] = [
	...connectorCredentials,
	historyStoreCredential,
];

/** The Poll Trigger's own parameters and options, as the editor shows them. */
const triggerProperties: INodeProperties[] = [
	{
		displayName: 'Items',
		name: 'items',
		type: 'string',
		default: '',
		placeholder: 'e.g. data.items',
		description:
			"JSONata selecting the list in the op's result. Leave empty when the result is the list itself.",
	},
	{
		displayName: 'ID',
		name: 'id',
		type: 'string',
		default: 'id',
		required: true,
		placeholder: 'e.g. sku & "-" & warehouse',
		description: "JSONata giving one item's key: a non-empty string or a finite number",
	},
	{
		displayName: 'Dedupe',
		name: 'dedupe',
		type: 'options',
		noDataExpression: true,
		default: 'unique',
		description:
			'How the trigger decides an item is new. Changing it later: Unique and Time Window keep what the other remembered; any other change makes the next poll a first poll, which follows First Poll Starts.',
		options: [
			{
				name: 'Changed',
				value: 'changed',
				description: 'Start when a key is new or its version (or content) changed',
			},
			{
				name: 'Greatest',
				value: 'greatest',
				description: 'Start keys above the highest one started (numbers, or strings; never mixed)',
			},
			{
				name: 'Last',
				value: 'last',
				description: 'Start the items after the last one started, for a list returned oldest first',
			},
			{
				name: 'None',
				value: 'none',
				description:
					'Start every item on every poll, e.g. unread mail that the workflow marks seen as its last step',
			},
			{
				name: 'Time Window',
				value: 'time_window',
				description: 'Start each key once per TTL; older keys are forgotten',
			},
			{ name: 'Unique', value: 'unique', description: 'Start each key once, ever' },
		],
	},
	{
		displayName: 'TTL',
		name: 'ttl',
		type: 'number',
		default: 24,
		typeOptions: { minValue: 1 },
		displayOptions: { show: { dedupe: ['time_window'] } },
		description: 'How long a started key is remembered',
	},
	{
		displayName: 'TTL Unit',
		name: 'ttlUnit',
		type: 'options',
		default: 'hours',
		displayOptions: { show: { dedupe: ['time_window'] } },
		options: timeUnitOptions('minutes', 'hours', 'days'),
	},
	{
		displayName: 'Version',
		name: 'version',
		type: 'string',
		default: '',
		placeholder: 'e.g. updatedAt',
		displayOptions: { show: { dedupe: ['changed'] } },
		description:
			"JSONata giving the item's version. Leave empty to compare a hash of the whole item.",
	},
	{
		displayName: 'History Store',
		name: 'historyStore',
		type: 'options',
		noDataExpression: true,
		default: 'staticData',
		displayOptions: { show: { dedupe: KEYED_KINDS } },
		description:
			"Where the keys the trigger remembers are kept. n8n reads the workflow's static data for every run it creates, and the editor downloads it with the workflow: past about 100,000 keys, keep them in PostgreSQL.",
		options: [
			{
				name: 'Static Data',
				value: 'staticData',
				description: "In the workflow's static data, with the trigger's other state",
			},
			{
				name: 'PostgreSQL',
				value: 'postgres',
				description: `In the table ${HISTORY_TABLE} of a PostgreSQL database (created if missing); static data keeps only the changes not yet saved there`,
			},
		],
	},
	{
		displayName: 'One Run per Item',
		name: 'oneRunPerItem',
		type: 'boolean',
		default: true,
		description:
			'Whether each new item starts its own run with the item as its data; off: one run with all new items',
	},
	...whenRunFailsProperties(
		'Item',
		"Its item starts again after a backoff, up to Max Attempts runs, each run's items carrying _attempt; then it is a dead letter, reported by one failed execution",
	),
	{
		displayName: 'Interval',
		name: 'interval',
		type: 'number',
		default: 5,
		typeOptions: { minValue: 1 },
		description: 'Time between polls (at least 5 seconds, at most 7 days)',
	},
	{
		displayName: 'Interval Unit',
		name: 'intervalUnit',
		type: 'options',
		default: 'minutes',
		options: timeUnitOptions('seconds', 'minutes', 'hours'),
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options: [
			{
				displayName: 'Alert When Nothing New For (Minutes)',
				name: 'silenceAfterMin',
				type: 'number',
				default: 0,
				typeOptions: { minValue: 0 },
				description:
					'When the polls have started nothing new for this long, one failed execution says so (and one more when the source lists something new again). 0: off.',
			},
			{
				displayName: 'Backoff Cap (Seconds)',
				name: 'backoffMaxSec',
				type: 'number',
				default: 0,
				description:
					'After failures, polls back off exponentially: the interval, then twice as long each time, up to this (at least the interval). 0: two intervals, so a source back from an outage is polled within two intervals of its return.',
			},
			{
				displayName: 'Execute Step Shows',
				name: 'executeStepShows',
				type: 'options',
				default: 'nextPoll',
				options: [
					{
						name: 'What the Next Poll Would Start',
						value: 'nextPoll',
						description: 'Each item the op returns now, with its key and verdict',
					},
					{
						name: 'Dead Letters',
						value: 'deadLetters',
						description:
							"The published trigger's dead letters (items whose runs all failed) and the items waiting for an attempt",
					},
					{
						name: 'Recent Starts',
						value: 'recentStarts',
						description:
							"The published trigger's recent runs: deduplication key, item keys, when, and how n8n settled each; for finding a crashed run's items",
					},
				],
				description: 'What "Execute step" outputs; it starts and remembers nothing either way',
			},
			{
				displayName: 'Failure Limit',
				name: 'failureLimit',
				type: 'number',
				default: 5,
				description:
					'Consecutive failed polls after which a second failed execution is recorded (the first failure is recorded too); the backoff goes on as before',
			},
			{
				displayName: 'First Poll Starts',
				name: 'firstPoll',
				type: 'options',
				default: 'all',
				options: [
					{ name: 'Everything the Op Returns', value: 'all' },
					{ name: 'Nothing, Just Remember What Is There', value: 'none' },
					{ name: 'Only the Newest N', value: 'newest' },
				],
				description: 'What the first poll after the trigger is first activated starts',
			},
			{
				displayName: 'Jitter (Seconds)',
				name: 'jitterSec',
				type: 'number',
				default: 0,
				description:
					'Delays each poll by a fixed, per-trigger offset below this, so triggers started together spread out',
			},
			{
				displayName: 'Max Runs in Flight',
				name: 'maxRunsInFlight',
				type: 'number',
				default: ARMED_RUNS_MAX,
				typeOptions: { minValue: 1 },
				description:
					'At most this many runs of a burst are handed to n8n and not yet ended; each of the rest goes out as one ends. n8n creates every run it is handed at once (300 took it to 4 GB of memory). Raise it for runs that wait long on slow systems.',
			},
			{
				displayName: 'Newest N',
				name: 'newestCount',
				type: 'number',
				default: 10,
				description: 'With "Only the Newest N": how many',
			},
			{
				displayName: 'Poll Timeout (Seconds)',
				name: 'timeoutSec',
				type: 'number',
				default: 60,
				description: 'A poll that takes longer fails (and backs off)',
			},
			{
				displayName: 'Remember at Most (Keys)',
				name: 'maxRemembered',
				type: 'number',
				default: 0,
				typeOptions: { minValue: 0 },
				displayOptions: { show: { '/dedupe': KEYED_KINDS } },
				description:
					"The history budget: past this many remembered keys, a poll that has read the source as far as it reads (its whole answer, or a newest-first list to known ground) forgets the oldest ones that reading did not list; keys it listed are kept, so a cap below what the source lists is exceeded by them. A forgotten key that the source lists again is new again and starts again (with Unique, once n8n no longer keeps its first run's execution). 0: no cap.",
			},
			{
				displayName: 'Start Again (Item Keys)',
				name: 'startAgain',
				type: 'string',
				default: '',
				placeholder: 'e.g. ["INC-101", 42]',
				description:
					'JSON list of item keys (as Recent Starts shows them) to start once more, e.g. the items of a crashed run: each starts at the next poll that still lists it, under a new deduplication key. A list is applied once, when the workflow is published with it; change the list to apply it again.',
			},
		],
	},
];

/** Every parameter of the Poll Trigger: the op and its arguments, Pagination, and the trigger's own. */
export const pollTriggerProperties: INodeProperties[] = [
	...connectorProperties(
		'The op\'s arguments, passed as written. For http.request: method, URL (absolute, or relative to the credential\'s base URL), query, headers, body. Ask only for what is new with {{ $cursor }} (Dedupe Greatest\'s high-water mark) or {{ $lastPollStartedAt }} (ISO time), e.g. "query": {"since": "{{ $lastPollStartedAt }}"}; Execute step shows the requests.',
	),
	...paginationProperties,
	...triggerProperties,
];
