import {
	type IDataObject,
	type INodeType,
	type INodeTypeDescription,
	type IWebhookFunctions,
	type IWebhookResponseData,
	NodeConnectionTypes,
} from 'n8n-workflow';

import {
	authenticateAtFixedUrl,
	type CallbackAuth,
	compileCorrelationPath,
	correlationIdAtFixedUrl,
	FIXED_CALLBACK_KEY,
	FIXED_MATCH_KEY,
	fixedMatchValue,
	forwardRequest,
	forwardUrl,
	headersToKeep,
	keepCallback,
	type KeepingPlace,
	type KeepVerdict,
	type KeptCallback,
	type LookupVerdict,
	NO_RUN_WAITS_ANY_MORE,
	pickWaitingRun,
} from '../../core/roundtrip';
import { inEditorWords } from '../shared/errors';
import { n8nHttpTransport } from '../shared/httpTransport';
import { deliverKeptCallbacks } from '../shared/keptCallbacks';
import { announceMissing, executionsWithCustomData, keptCallbackPlace } from '../shared/n8nDoor';
import {
	CALLBACK_CREDENTIAL,
	callbackAuthFrom,
	readCallback,
} from '../RoundTripWait/roundTripContext';
import { roundTripCallbackProperties } from './RoundTripCallbackDescription';

/** The run waiting for `match`, found in n8n's database (pickWaitingRun); undefined where this n8n offers no lookup. */
async function waitingRun(match: string): Promise<LookupVerdict | undefined> {
	const found = await executionsWithCustomData(FIXED_MATCH_KEY, match);
	return found
		? pickWaitingRun(
				found.map((run) => ({ ...run, callbackUrl: run.keyValues[FIXED_CALLBACK_KEY] })),
			)
		: undefined;
}

/** What is kept of an authenticated callback: no credential; the body as text (it is signed anew when handed on). */
function keptFrom(
	auth: CallbackAuth,
	inbound: Awaited<ReturnType<typeof readCallback>>,
): KeptCallback {
	const query: Record<string, string> = {};
	for (const [name, value] of Object.entries(inbound.query))
		if (typeof value === 'string') query[name] = value;
	return {
		headers: headersToKeep(auth, inbound.headers),
		body: inbound.rawBody.toString('utf8'),
		query,
	};
}

/**
 * The answer to a callback just kept: 202, it is kept for the run that will wait for its id. A run
 * that began to wait meanwhile may have looked for kept callbacks before this one was there: looked
 * up again, and if one waits now, it is handed what is kept for it here; the partner then gets the
 * run's answer to this callback, or 410 when the run resumed with one kept before it (unless the run
 * itself claimed it first: still 202, it is on its way).
 */
async function answerKept(
	context: IWebhookFunctions,
	{ place, auth, match, fixedUrl, kept }: KeptHere,
	answer: (status: number, body: IDataObject) => IWebhookResponseData,
): Promise<IWebhookResponseData> {
	const wait = await waitingRun(match);
	const url = wait?.ok ? forwardUrl(wait, fixedUrl, {}) : undefined;
	const deliveries = url ? await deliverKeptCallbacks(context, place, auth, url, match) : [];
	const handed = deliveries.find((delivery) => delivery.key === kept.key);
	// Dropped: the run resumed with a callback kept before this one, which is then a copy after the resume.
	if (handed?.dropped) return answer(410, { error: NO_RUN_WAITS_ANY_MORE, waiting: false });
	if (handed?.answer) {
		let body: IDataObject;
		try {
			body = JSON.parse(handed.answer.body) as IDataObject;
		} catch {
			body = { answer: handed.answer.body };
		}
		return answer(handed.answer.status, body);
	}
	return answer(202, {
		kept: true,
		resumed: false,
		keptUntil: new Date(kept.keptUntilMs).toISOString(),
		reason: 'no run waits for this id yet: the callback is kept for the run that waits for it',
	});
}

/** What answerKept needs: the keeping place, the partner's credential, the match, the fixed URL and what was kept. */
interface KeptHere {
	place: KeepingPlace;
	auth: CallbackAuth;
	match: string;
	fixedUrl: string;
	kept: Extract<KeepVerdict, { kept: true }>;
}

// The path is registered with n8n when the workflow is published; nothing to create at the partner
// (the administrator registers the URL there once). It starts no run: it resumes waiting ones.
// eslint-disable-next-line @n8n/community-nodes/webhook-lifecycle-complete
export class RoundTripCallback implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Round-Trip Callback',
		name: 'roundTripCallback',
		icon: { light: 'file:roundTripCallback.svg', dark: 'file:roundTripCallback.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle: '={{"POST /webhook/" + $parameter["path"]}}',
		description:
			"One fixed callback URL for a partner: resumes the Round-Trip Wait waiting for the callback's correlation ID, in any workflow",
		defaults: { name: 'Round-Trip Callback' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: CALLBACK_CREDENTIAL, required: true }],
		webhooks: [
			{
				name: 'default',
				httpMethod: 'POST',
				responseMode: 'onReceived',
				path: '={{$parameter["path"]}}',
				isFullPath: true,
			},
		],
		properties: roundTripCallbackProperties,
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const response = this.getResponseObject();
		const answer = (status: number, body: IDataObject): IWebhookResponseData => {
			response.status(status).json(body);
			return { noWebhookResponse: true };
		};
		const refuse = (status: number, error: string, waiting: boolean) =>
			answer(status, { error, waiting });
		try {
			const n8n = announceMissing(this, 'callback');
			const inbound = await readCallback(this);
			const auth = callbackAuthFrom(await this.getCredentials(CALLBACK_CREDENTIAL));
			// First, before anything is looked up: an unauthenticated caller learns nothing about any run.
			const authenticated = authenticateAtFixedUrl(auth, inbound, Date.now());
			if (!authenticated.ok) return refuse(authenticated.status, authenticated.reason, true);
			const path = compileCorrelationPath(this.getNodeParameter('correlationIdPath') as string);
			const id = await correlationIdAtFixedUrl(auth, path, inbound);
			if (!id.ok) return refuse(id.status, id.reason, true);
			const credentialId = this.getNode().credentials?.[CALLBACK_CREDENTIAL]?.id;
			const match = fixedMatchValue(String(credentialId), id.id);
			const fixedUrl = this.getNodeWebhookUrl('default') ?? '';
			const wait = n8n.executionLookup ? await waitingRun(match) : undefined;
			if (!wait) return refuse(503, 'this n8n offers no way to find the waiting run', true);
			const place = n8n.callbackStore ? keptCallbackPlace() : undefined;
			if (!wait.ok && wait.status === 404 && place) {
				const kept = await keepCallback(place, match, keptFrom(auth, inbound), Date.now());
				if (!kept.kept)
					return refuse(404, `${wait.reason}, and it could not be kept: ${kept.reason}`, false);
				return await answerKept(this, { place, auth, match, fixedUrl, kept }, answer);
			}
			if (!wait.ok) return refuse(wait.status, wait.reason, false);
			const url = forwardUrl(wait, fixedUrl, inbound.query);
			if (!url)
				return refuse(500, `the run waiting for this id keeps no callback URL of this n8n`, true);
			// The waiting Round-Trip Wait judges it as any callback (its checks, its Resume Condition, n8n's resume-once).
			const forwarded = await n8nHttpTransport(this, { auth: { kind: 'none' } })(
				forwardRequest(auth, url, inbound, Math.floor(Date.now() / 1000)),
			);
			response.status(forwarded.status);
			response.type(forwarded.headers['content-type'] ?? 'application/json').send(forwarded.body);
			return { noWebhookResponse: true };
		} catch (error) {
			return refuse(
				500,
				`The callback could not be checked: ${inEditorWords(error.message, this.getNode())}`,
				true,
			);
		}
	}
}
