import os
from glob import glob

from setuptools import find_packages, setup

package_name = 'maxim_bringup'


def tree(directory):
    """Data files of a folder, kept in their sub-folders under share/<package>/."""
    out = []
    for path in glob(os.path.join(directory, '**', '*'), recursive=True):
        if os.path.isfile(path):
            out.append((os.path.join('share', package_name, os.path.dirname(path)), [path]))
    return out


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    package_data={package_name: ['**/*.xml', '**/*.json', '**/*.yaml', '**/*.gbnf', '**/*.txt']},
    include_package_data=True,
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ] + tree('launch') + tree('config') + tree('urdf') + tree('rviz') + tree('worlds'),
    install_requires=['setuptools'],
    zip_safe=False,
    maintainer='Maxim developers',
    maintainer_email='dev@maxim-robot.org',
    description='Launch files, parameters, URDF, rviz config and the maxim command.',
    license='Apache-2.0',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'maxim = maxim_bringup.cli:main',
            'console_node = maxim_bringup.nodes.console_node:main',
            'joint_command_relay = maxim_bringup.nodes.joint_command_relay:main',
            'lifecycle_manager = maxim_bringup.nodes.lifecycle_manager:main',
        ],
    },
)
