"""The accounts app's services, one module per concern: `signup` (making an account, confirming its
e-mail address), `mail` (the notices accounts send), `credentials` (what a new password revokes),
`two_factor` (staff TOTP), `exports` (a person's data as one archive) and `closing` (deleting an
account)."""
