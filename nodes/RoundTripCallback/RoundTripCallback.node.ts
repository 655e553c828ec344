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
	compileCorrelationPath,
	correlationIdAtFixedUrl,
	FIXED_CALLBACK_KEY,
	FIXED_MATCH_KEY,
	fixedMatchValue,
	forwardHeaders,
	forwardUrl,
	pickWaitingRun,
} from '../../core/roundtrip';
import { inEditorWords } from '../shared/errors';
import { n8nHttpTransport } from '../shared/httpTransport';
import { announceMissing, executionsWithCustomData } from '../shared/n8nDoor';
import {
	CALLBACK_CREDENTIAL,
	callbackAuthFrom,
	readCallback,
} from '../RoundTripWait/roundTripContext';
import { roundTripCallbackProperties } from './RoundTripCallbackDescription';

/** How long forwarding one callback to its waiting run may take (the run's own checks and n8n's resume). */
const FORWARD_TIMEOUT_MS = 60_000;

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
			const found = n8n.executionLookup
				? await executionsWithCustomData(
						FIXED_MATCH_KEY,
						fixedMatchValue(String(credentialId), id.id),
					)
				: undefined;
			if (!found) return refuse(503, 'this n8n offers no way to find the waiting run', true);
			const wait = pickWaitingRun(
				found.map((run) => ({ ...run, callbackUrl: run.keyValues[FIXED_CALLBACK_KEY] })),
			);
			if (!wait.ok) return refuse(wait.status, wait.reason, false);
			const url = forwardUrl(wait, this.getNodeWebhookUrl('default') ?? '', inbound.query);
			if (!url)
				return refuse(500, `the run waiting for this id keeps no callback URL of this n8n`, true);
			// The waiting Round-Trip Wait judges it as any callback (its checks, its Resume Condition, n8n's resume-once).
			const forwarded = await n8nHttpTransport(this, { auth: { kind: 'none' } })({
				method: 'POST',
				url,
				headers: forwardHeaders(
					auth,
					inbound.headers,
					url,
					inbound.rawBody,
					Math.floor(Date.now() / 1000),
				),
				body: inbound.rawBody.toString('utf8'),
				timeoutMs: FORWARD_TIMEOUT_MS,
			});
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
