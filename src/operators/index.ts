// Named operators and their roles: what the rest of the service may use of this domain.
export {
  BOOTSTRAP_ADMIN,
  createOperator,
  deleteOperator,
  getOperator,
  listOperators,
  liveOperator,
  type Operator,
  type OperatorRow,
  operatorOf,
  resolveOperatorToken,
  updateOperator,
} from './operators.js';
export { OPERATOR_ROLES, type OperatorRole, requiredRole, roleAllows, roleBelow, roleRefusal } from './roles.js';
