"""Identity of people (beside ``auth``, which holds keys and roles): API-key details and last use
(``keyuse``), users and browser sessions (``sessions``), single sign-on through OIDC (``oidc``) and SAML
(``saml``), second factors (``mfa``) and SCIM provisioning (``scim``)."""
