// Operators: who may use the admin API and this console, with which role; an admin names them
// (their token shown once), changes their role and deletes them. Others see the list only.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  createOperator,
  deleteOperator,
  listOperators,
  OPERATOR_ROLES,
  roleAllows,
  updateOperator,
} from '../../../../operators/index.js';
import { IdParams } from '../../../schemas.js';
import { NewOperatorBody, OperatorChangesBody } from '../../operators.js';
import { html, when } from '../html.js';
import { consoleUrl, page, postForm, secretBlock, secretWarning, table } from '../layout.js';
import { answer, type ConsoleDependencies, sendPage, text } from '../respond.js';

const roleOptions = (selected: string) =>
  OPERATOR_ROLES.map((role) => html`<option${role === selected ? html` selected` : ''}>${role}</option>`);

const config = { operatorRole: 'admin' as const };

export const operatorRoutes: FastifyPluginAsyncTypebox<ConsoleDependencies> = async (app, { context }) => {
  const { db, caches } = context;
  const hide = true;

  app.get('/operators', { schema: { hide } }, async (request, reply) => {
    const view = request.consoleView;
    const manages = roleAllows(request.consoleSession.operator.role, 'admin');
    const rows = (await listOperators(db)).map(
      (operator) =>
        html`<tr><td><a href="${consoleUrl(`/audit?operator=${operator.id}`)}">${operator.name}</a></td><td>${
          manages
            ? postForm(
                view,
                `/operators/${operator.id}`,
                html`<select name="role" aria-label="Role of ${operator.name}">${roleOptions(operator.role)}</select> <button class="small">Change</button>`,
                { className: 'inline' },
              )
            : operator.role
        }</td><td class="mono">${operator.hint}</td><td>${when(operator.createdAt)}</td><td>${
          manages &&
          postForm(view, `/operators/${operator.id}/delete`, html`<button class="danger small">Delete</button>`, {
            confirm: `Delete the operator "${operator.name}"? Their token and console sessions stop at once.`,
            className: 'inline',
          })
        }</td></tr>`,
    );
    const content = html`<p class="hint">Roles: <strong>read-only</strong> sees everything and changes nothing; <strong>operator</strong> changes everything but operators; <strong>admin</strong> also manages operators. The service's <code>ADMIN_TOKEN</code> is the bootstrap admin.</p>
${table(['Name', 'Role', 'Token', 'Created', ''], rows, 'No named operator yet: everyone uses ADMIN_TOKEN.')}
${
  manages &&
  html`<section class="card"><h2>Name an operator</h2>${postForm(
    view,
    '/operators',
    html`<label>Name <input name="name" required maxlength="100"></label>
<label>Role <select name="role">${roleOptions('read-only')}</select></label>
<button>Create operator</button>`,
    { className: 'stack' },
  )}</section>`
}`;
    return sendPage(reply, page(view, 'operators', 'Operators', content));
  });

  app.post(
    '/operators',
    {
      config: { ...config, consoleForm: (fields) => ({ name: text(fields, 'name'), role: text(fields, 'role') }) },
      schema: { hide, body: NewOperatorBody },
    },
    async (request, reply) => {
      const { operator, token } = await createOperator(db, request.body);
      request.auditTarget = operator.id;
      const content = html`${secretWarning}${secretBlock(`Token of ${operator.name} (${operator.role})`, token, 'secret-0')}
<p>Hand it to ${operator.name} over a private channel: they sign in to this console with it, and use it as <code>ADMIN_TOKEN</code> for partnerctl.</p>
<p><a class="button" href="${consoleUrl('/operators')}">I have copied it: back to the operators</a></p>`;
      return answer(reply.code(201), page(request.consoleView, 'operators', 'Operator created', content));
    },
  );

  app.post(
    '/operators/:id',
    {
      config: { ...config, consoleForm: (fields) => ({ role: text(fields, 'role') }) },
      schema: { hide, params: IdParams, body: OperatorChangesBody },
    },
    async (request, reply) => {
      const changed = await updateOperator(db, caches, request.params.id, request.body);
      return answer(reply, { redirect: '/operators', notice: `${changed.name} is now ${changed.role}.` });
    },
  );

  app.post('/operators/:id/delete', { config, schema: { hide, params: IdParams } }, async (request, reply) => {
    const deleted = await deleteOperator(db, caches, request.params.id);
    return answer(reply, { redirect: '/operators', notice: `Operator ${deleted.name} deleted.` });
  });
};
