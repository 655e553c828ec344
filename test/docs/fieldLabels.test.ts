/**
 * Every field a ConfigError or a message names resolves to a label the editor shows, so that a
 * renamed parameter cannot leave a message saying a raw id. The core names fields by id
 * (core/configError.ts `fieldRef`); nodes/shared/editorWords.ts says each as the node's description
 * (or the credential's) labels it. The ids are read from the source: the literal first argument of
 * `new ConfigError`, `checkRange`, `fieldRef` and the functions that forward their field to them,
 * and the typed lists of the Round-Trip Wait's settings and of the paging settings.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

import { SETTING_NAMES } from '../../core/roundtrip';
import { Connector } from '../../nodes/Connector/Connector.node';
import { DurableScheduleTrigger } from '../../nodes/DurableScheduleTrigger/DurableScheduleTrigger.node';
import { PollTrigger } from '../../nodes/PollTrigger/PollTrigger.node';
import { RoundTripCallback } from '../../nodes/RoundTripCallback/RoundTripCallback.node';
import { RoundTripWait } from '../../nodes/RoundTripWait/RoundTripWait.node';
import { CREDENTIALS, fieldLabel } from '../../nodes/shared/editorWords';
import { NODE_PROPERTIES } from '../../nodes/shared/errors';
import { PAGING_OPTIONS } from '../../nodes/shared/pagination';
import { repoRoot } from '../harness/paths';

function sourceFiles(dir: string): string[] {
	return readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		if (statSync(path).isDirectory()) return sourceFiles(path);
		return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
	});
}

const files = [...sourceFiles(join(repoRoot, 'core')), ...sourceFiles(join(repoRoot, 'nodes'))];
const shown = (path: string) => relative(repoRoot, path);

/** The functions that take a field's id first and hand it to a ConfigError. */
const FIELD_TAKERS = [
	'new ConfigError',
	'checkRange',
	'fieldRef',
	'expressionError',
	'paginationError',
	'resolvedUrl',
	'fail',
	'checkFieldName',
	'credentialError',
	'requireNonEmpty',
	'requireHeaderName',
	'requiredField',
	'endpointField',
];

/**
 * The places that build a ConfigError from a field in a variable: each is one of FIELD_TAKERS (or
 * `choice` in nodes/shared/pagination.ts, whose fields are paging settings). A new one must be added
 * there, so that its callers' ids are checked too.
 */
const FORWARDING_FILES = [
	'core/configError.ts',
	'core/connectors/pagination.ts',
	'core/poll/expressions.ts',
	'core/roundtrip/settings.ts',
	'core/roundtrip/signature.ts',
	'nodes/shared/pagination.ts',
	'nodes/shared/s3Credential.ts',
];

/**
 * Settings no node sets from a parameter (the node makes them, or leaves them at their defaults):
 * their errors name the id, as nothing in the editor can be pointed at.
 */
const NOT_PARAMETERS = ['scheduleId', 'anchor', 'backoff.initialMs', 'backoff.factor'];

/** The nodes whose descriptions a file's ids are labelled by. */
function nodesOf(file: string): string[] {
	if (/pagination\.ts$/.test(file)) return ['pollTrigger'];
	if (file.startsWith('core/poll/') || file.startsWith('nodes/PollTrigger/'))
		return ['pollTrigger'];
	if (file.startsWith('core/schedule/') || file.startsWith('nodes/DurableScheduleTrigger/'))
		return ['durableScheduleTrigger'];
	if (file.startsWith('core/roundtrip/') || file.startsWith('nodes/RoundTripWait/'))
		return ['roundTripWait'];
	if (file.startsWith('nodes/RoundTripCallback/')) return ['roundTripCallback'];
	// When a Run Fails: shown by both triggers.
	if (file === 'core/retryPolicy.ts' || file === 'nodes/shared/whenRunFails.ts')
		return ['pollTrigger', 'durableScheduleTrigger'];
	// The ops, their HTTP and credentials: shown by the Poll Trigger and the Connector alike.
	return ['pollTrigger', 'connector'];
}

const CALL = new RegExp(`(?:${FIELD_TAKERS.join('|')})\\(\\s*'([\\w.]+)'`, 'g');

/** Each literal field id of the source, with the file it is in. */
const thrown = files.flatMap((file) =>
	[...readFileSync(file, 'utf8').matchAll(CALL)].map((match) => ({
		file: shown(file),
		field: match[1],
	})),
);

const isCredentialField = (field: string) =>
	Object.values(CREDENTIALS).some(({ fields }) => field in fields);

describe('every field a message names has a label', () => {
	it('reads the ids from the source (the check is not vacuous)', () => {
		const fields = new Set(thrown.map(({ field }) => field));
		for (const field of ['interval', 'queueLimit', 'with', 'cron', 'secret', 'maxRemembered'])
			expect(fields).toContain(field);
		expect(fields.size).toBeGreaterThan(40);
	});

	it('looks labels up in the very properties each node shows', () => {
		const nodes = [
			new PollTrigger(),
			new DurableScheduleTrigger(),
			new RoundTripWait(),
			new RoundTripCallback(),
			new Connector(),
		];
		expect(Object.keys(NODE_PROPERTIES).sort()).toEqual(
			nodes.map(({ description }) => description.name).sort(),
		);
		for (const { description } of nodes)
			expect(NODE_PROPERTIES[description.name]).toBe(description.properties);
	});

	it('knows every place that hands a field in a variable to a ConfigError', () => {
		const forwarding = files
			.filter((file) =>
				/(?:new ConfigError|checkRange)\(\s*[a-z]\w*\s*,/.test(readFileSync(file, 'utf8')),
			)
			.map(shown)
			.sort();
		expect(forwarding).toEqual(FORWARDING_FILES);
	});

	it("labels each id thrown, by the node's description or a credential's", () => {
		const unlabelled = thrown
			.filter(({ field }) => !NOT_PARAMETERS.includes(field))
			.filter(
				({ file, field }) =>
					!isCredentialField(field) &&
					!nodesOf(file).every((node) => fieldLabel(NODE_PROPERTIES[node], field) !== undefined),
			)
			.map(({ file, field }) => `${file}: ${field}`);
		expect(unlabelled).toEqual([]);
	});

	it('labels every setting of the Round-Trip Wait and every paging setting', () => {
		const unlabelled = [
			...SETTING_NAMES.filter(
				(name) => fieldLabel(NODE_PROPERTIES.roundTripWait, name) === undefined,
			),
			...Object.keys(PAGING_OPTIONS).filter(
				(name) => fieldLabel(NODE_PROPERTIES.pollTrigger, name) === undefined,
			),
		];
		expect(unlabelled).toEqual([]);
	});

	it('names by id only what no parameter sets', () => {
		expect(thrown.map(({ field }) => field)).toEqual(expect.arrayContaining(NOT_PARAMETERS));
		for (const field of NOT_PARAMETERS)
			for (const properties of Object.values(NODE_PROPERTIES))
				expect(fieldLabel(properties, field)).toBeUndefined();
	});
});
