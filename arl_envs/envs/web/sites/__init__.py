"""Multi-page websites served offline (a shop at WebShop scale, a forum) and their task templates.

Each site is a Flask application over SQLite (templates and static files are package data); ``arl_envs.envs.web
.sites.env.SiteEnv`` runs its tasks in the web domain's Chromium (ids ``arl/web.site-<site>-v0``).
"""
